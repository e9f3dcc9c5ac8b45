/**
 * The bench scripts' command lines, read the same way everywhere: each script keeps its own
 * options and defaults in its parseArgs, and walks its arguments with readArgs. A flag that needs a
 * value and has none, a flag no script knows and a KEY=VALUE without a key are errors that say so.
 */
import process from 'node:process';

/**
 * Calls `onFlag(flag, next, peek)` for each argument in turn. `next()` takes the flag's value (the
 * following argument; an error naming the flag if there is none), `peek()` looks at the following
 * argument without taking it. `onFlag` returns false for a flag it does not know: then the error
 * is `unknown argument FLAG`, followed by `unknownHint`.
 */
export function readArgs(argv, onFlag, { unknownHint = '' } = {}) {
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const next = () => {
      const value = argv[++i];
      if (value === undefined) throw new Error(`${flag} needs a value`);
      return value;
    };
    const peek = () => argv[i + 1];
    if (onFlag(flag, next, peek) === false) throw new Error(`unknown argument ${flag}${unknownHint}`);
  }
}

/** `KEY=VALUE` as [KEY, VALUE], split at the first `=`; an error naming `flag` without a key or `=`. */
export function keyValue(text, flag) {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new Error(`${flag} wants KEY=VALUE, not ${text}`);
  return [text.slice(0, eq), text.slice(eq + 1)];
}

/** Settings given as a list of `KEY=VALUE` (empty entries skipped), e.g. a `--variant`'s, as an env object. */
export function envOf(pairs, flag) {
  return Object.fromEntries(pairs.filter((kv) => kv !== '').map((kv) => keyValue(kv, flag)));
}

/** The value after `name` among the process's arguments, or `fallback` (the small servers' and workers' reader). */
export function argValue(name, fallback, argv = process.argv) {
  const i = argv.indexOf(name);
  return i === -1 ? fallback : argv[i + 1];
}
