/**
 * Rendered DataTable results, remembered by identity. WhatsNew hands the same frozen
 * table object for the same answer while the news are unchanged (src/domain/news-cache.ts), so
 * its XML (100 rows, dates formatted in the configured zone), and its UTF-8 bytes when asked
 * for, are produced once per binding instead of on every request.
 *
 * Only a frozen table of frozen rows is remembered: its cells can no longer change, so its text
 * cannot either (Date cells are never modified: nothing in the service writes to a Date). Any
 * other table is rendered every time, as before. Entries live as long as the table object; the
 * domain bounds how many of those it keeps.
 *
 * `shape` is the object that, together with the table, fixes the text: the SOAP response frame
 * (one per operation, SOAP version and compiled contract) or the compiled operation (HTTP GET /
 * POST). Both belong to one compiled contract, hence to one time zone.
 */
import type { Row } from './datatable.js';

interface Rendered {
  readonly text: string;
  /** Encoded on first request for bytes; shared, so never to be modified. */
  bytes: Buffer | null;
}

const rendered = new WeakMap<readonly Row[], Map<object, Rendered>>();

function unchangeable(rows: readonly Row[]): boolean {
  return Object.isFrozen(rows) && rows.every((row) => Object.isFrozen(row));
}

function entry(rows: readonly Row[], shape: object, render: () => string): Rendered {
  const byShape = rendered.get(rows);
  const known = byShape?.get(shape);
  if (known !== undefined) return known;
  const made: Rendered = { text: render(), bytes: null };
  if (byShape !== undefined) byShape.set(shape, made);
  else if (unchangeable(rows)) rendered.set(rows, new Map([[shape, made]]));
  return made;
}

/** The text `render()` gives for this table and shape; rendered once if the table is frozen. */
export function renderTableOnce(rows: readonly Row[], shape: object, render: () => string): string {
  return entry(rows, shape, render).text;
}

/**
 * The same as UTF-8 bytes, encoded once if the table is frozen (encoding 50 kB of XML costs
 * about as much as the rest of a cached WhatsNew). The Buffer is shared: write it, never modify it.
 */
export function encodeTableOnce(rows: readonly Row[], shape: object, render: () => string): Buffer {
  const made = entry(rows, shape, render);
  if (made.bytes !== null) return made.bytes;
  const bytes = Buffer.from(made.text, 'utf8');
  if (rendered.get(rows)?.get(shape) === made) made.bytes = bytes;
  return bytes;
}
