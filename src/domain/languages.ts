/**
 * Language tags for news. Tags are kept in canonical BCP 47 form (`pt-BR`, `zh-Hant-TW`) so that
 * matching is a plain equality whatever case the client or operator used.
 */

/**
 * Tags already canonicalised: Intl.getCanonicalLocales costs microseconds and WhatsNew asks for
 * up to three per request. Clients send a handful of distinct tags; the map is emptied
 * whenever it fills, so arbitrary input cannot grow it.
 */
const canonicalTags = new Map<string, string | null>();
const MAX_REMEMBERED_TAGS = 512;

/** Canonical form of a well-formed tag, or null. */
export function canonicalLanguage(tag: string | null | undefined): string | null {
  if (typeof tag !== 'string') return null;
  const known = canonicalTags.get(tag);
  if (known !== undefined) return known;
  const canonical = canonicalize(tag);
  if (canonicalTags.size >= MAX_REMEMBERED_TAGS) canonicalTags.clear();
  canonicalTags.set(tag, canonical);
  return canonical;
}

function canonicalize(tag: string): string | null {
  const trimmed = tag.trim().replace(/_/g, '-');
  if (trimmed === '' || trimmed.length > 35) return null;
  try {
    const [canonical] = Intl.getCanonicalLocales(trimmed);
    return canonical ?? null;
  } catch {
    return null;
  }
}

/**
 * The languages WhatsNew tries, in order: the exact tag, its primary subtag (pt-BR -> pt), then
 * the application's default. Duplicates and unreadable tags are dropped.
 */
export function languageCandidates(requested: string | null, defaultLanguage: string): readonly string[] {
  const out: string[] = [];
  const add = (tag: string | null): void => {
    if (tag !== null && !out.includes(tag)) out.push(tag);
  };
  const exact = canonicalLanguage(requested);
  add(exact);
  if (exact !== null) add(canonicalLanguage(exact.split('-')[0]));
  add(canonicalLanguage(defaultLanguage));
  return out;
}
