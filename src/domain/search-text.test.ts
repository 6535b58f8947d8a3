import { describe, expect, it } from 'vitest';
import {
  characterCount,
  containsPattern,
  normalisedLength,
  normaliseText,
  searchDocument,
  searchWords,
} from './search-text.js';

describe('search text', () => {
  it('folds case, accents and compatibility forms', () => {
    expect(normaliseText('Crème BRÛLÉE')).toBe('creme brulee');
    expect(normaliseText('ÜBER straße')).toBe('uber straße');
    expect(normaliseText('ﬁne Ｆｕｌｌ')).toBe('fine full');
    expect(normaliseText('  a \t b\n')).toBe('a b');
  });

  it('splits a search into distinct words, control characters as spaces', () => {
    expect(searchWords(' Chill  chill VIBES ')).toEqual(['chill', 'vibes']);
    expect(searchWords('a\u0000b')).toEqual(['a', 'b']);
    expect(searchWords('   ')).toEqual([]);
  });

  it('builds one document with a line per distinct field', () => {
    expect(searchDocument(['Chill', 'Jazz', 'jazz', ''])).toBe('chill\njazz');
  });

  it('escapes LIKE wildcards', () => {
    expect(containsPattern('100%_\\')).toBe('%100\\%\\_\\\\%');
  });

  it('measures a search once normalised: compatibility characters can grow it', () => {
    expect(searchWords('㌖')).toEqual(['キロメートル']);
    expect(normalisedLength(searchWords(`${'㌖'.repeat(40)} x`))).toBe(40 * 6 + 2);
  });

  it('counts code points, not UTF-16 units', () => {
    expect(characterCount('😀é')).toBe(2);
  });
});
