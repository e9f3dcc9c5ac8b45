/**
 * Parsers of command-line values that several commands share (commander calls them; an
 * InvalidArgumentError becomes a usage error naming the option). Dates are dates.ts's, durations
 * durations.ts's.
 */
import { InvalidArgumentError } from 'commander';

/** Any whole number, sign allowed (the admin service checks its range). */
export function integerArg(text: string): number {
  if (!/^-?\d+$/.test(text.trim())) throw new InvalidArgumentError('expected a whole number.');
  return Number(text.trim());
}

/** An AppID as the contract has them: 1 to 2147483647 (an xs:int above 0). */
export function appIdArg(text: string): number {
  if (!/^\d{1,10}$/.test(text.trim()) || Number(text) < 1 || Number(text) > 2147483647) throw new InvalidArgumentError('expected an AppID (1 to 2147483647).');
  return Number(text.trim());
}

/** A repeatable option: each value parsed by `parse`, collected in order. */
export function collecting<T>(parse: (text: string) => T): (text: string, previous: T[] | undefined) => T[] {
  return (text, previous) => [...(previous ?? []), parse(text)];
}

/** A repeatable option's texts, as given. */
export const collectText = collecting((text: string) => text);

/** `--attr KEY=VALUE`, repeatable; the value may contain `=`. A key given twice is a usage error. */
export function collectAttribute(text: string, previous: Record<string, string> | undefined): Record<string, string> {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('expected KEY=VALUE.');
  const key = text.slice(0, eq);
  if (previous !== undefined && Object.hasOwn(previous, key)) throw new InvalidArgumentError(`attribute ${key} is given twice.`);
  return { ...previous, [key]: text.slice(eq + 1) };
}
