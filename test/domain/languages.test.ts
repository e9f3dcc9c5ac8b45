import { describe, expect, it } from 'vitest';
import { canonicalLanguage, languageCandidates } from '../../src/domain/languages.js';

describe('languages', () => {
  it('canonicalises tags whatever their case or separator', () => {
    expect(canonicalLanguage('pt-br')).toBe('pt-BR');
    expect(canonicalLanguage('PT_BR')).toBe('pt-BR');
    expect(canonicalLanguage('zh-hant-tw')).toBe('zh-Hant-TW');
    expect(canonicalLanguage('EN')).toBe('en');
    for (const bad of ['', '  ', 'not a tag', '12', null]) expect(canonicalLanguage(bad)).toBeNull();
  });

  it('tries the exact tag, then its primary subtag, then the default', () => {
    expect(languageCandidates('pt-BR', 'en')).toEqual(['pt-BR', 'pt', 'en']);
    expect(languageCandidates('zh-Hant-TW', 'en')).toEqual(['zh-Hant-TW', 'zh', 'en']);
    expect(languageCandidates('pt', 'en')).toEqual(['pt', 'en']);
    expect(languageCandidates('en-US', 'en')).toEqual(['en-US', 'en']);
    expect(languageCandidates('', 'pt-BR')).toEqual(['pt-BR']);
    expect(languageCandidates(null, 'en')).toEqual(['en']);
    expect(languageCandidates('%%%', 'en')).toEqual(['en']);
  });

  it('gives the same answers when asked again, also after many distinct tags have been seen', () => {
    const expected = new Map([['pt_br', 'pt-BR'], ['EN', 'en'], ['not a tag', null], ['ZH-hant-tw', 'zh-Hant-TW']]);
    for (let round = 0; round < 3; round++) {
      for (const [tag, canonical] of expected) expect(canonicalLanguage(tag)).toBe(canonical);
      // More distinct client-sent tags than are remembered: answers must not change.
      for (let i = 0; i < 1500; i++) canonicalLanguage(`x-${round}-${i}`);
    }
    expect(canonicalLanguage(' pt_br ')).toBe('pt-BR');
  });
});
