/**
 * WhatsNew's rows from the domain's news items, column by column as the compatibility profile's
 * `whatsNew.columns` say (src/contract/compat-profile.ts): a news field, a constant, or an extra
 * per-item attribute (absent: no element, as DataSet writes DBNull). Compiled once at start; the
 * wire layer turns each cell into the column type's text (src/wire/datatable-values.ts).
 */
import type { NewsColumn, NewsTableProfile } from '../contract/compat-profile.js';
import type { NewsItem } from '../domain/auth-service.js';
import type { Cell, Row } from '../wire/datatable.js';

type CellOf = (item: NewsItem) => Cell;

function cellOf(column: NewsColumn): CellOf {
  const from = column.from;
  if ('const' in from) {
    const value = from.const;
    return () => value;
  }
  if ('attribute' in from) {
    const name = from.attribute;
    return (item) => (Object.hasOwn(item.attributes, name) ? (item.attributes[name] ?? null) : null);
  }
  switch (from.field) {
    case 'newsId': return (item) => item.newsId;
    case 'appId': return (item) => item.appId;
    case 'title': return (item) => item.title;
    case 'body': return (item) => item.body;
    case 'language': return (item) => item.language;
    case 'url': return (item) => item.url;
    case 'publishedAt': return (item) => item.publishedAt;
    case 'expiresAt': return (item) => item.expiresAt;
    case 'minVersion': return (item) => item.minVersion;
    case 'maxVersion': return (item) => item.maxVersion;
    case 'membersOnly': return (item) => item.membersOnly;
  }
}

/** The frozen row of one item, its cells in the profile's column order. */
export function compileNewsRow(table: NewsTableProfile): (item: NewsItem) => Row {
  const cells = table.columns.map(cellOf);
  return (item) => Object.freeze(cells.map((cell) => cell(item)));
}
