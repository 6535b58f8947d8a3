import { describe, expect, it } from 'vitest';
import { UserError, printableName, userName } from './user-name.js';

const NFC = 'jos\u00e9';
const NFD = 'jose\u0301';

describe('userName', () => {
  it('gives one name for the NFC and NFD forms', () => {
    expect(NFC).not.toBe(NFD);
    expect(userName(NFD)).toBe(NFC);
    expect(userName(NFC)).toBe(NFC);
    expect(userName('\u212bngstr\u00f6m')).toBe('\u00c5ngstr\u00f6m');
    expect(userName('bob')).toBe('bob');
  });

  it('refuses control and format characters, naming the one it found and where', () => {
    const cases: [string, string][] = [
      ['bob\u200b', 'U+200B at character 4'],
      ['bo\u200db', 'U+200D at character 3'],
      ['admin\u202etxt', 'U+202E at character 6'],
      ['\u2066eve', 'U+2066 at character 1'],
      ['\ufeffann', 'U+FEFF at character 1'],
      ['soft\u00adhyphen', 'U+00AD at character 5'],
      ['bell\u0007', 'U+0007 at character 5'],
      ['tab\tbed', 'U+0009 at character 4'],
      ['\u{1f600}\u200b', 'U+200B at character 2'],
    ];
    for (const [name, where] of cases) {
      expect(() => userName(name), JSON.stringify(name)).toThrow(UserError);
      expect(() => userName(name), JSON.stringify(name)).toThrow(
        `A user name may not contain control or format characters (such as zero-width spaces or bidirectional marks): it has ${where}.`,
      );
    }
  });

  it('refuses ":", spaces, and names outside 1 to 64 characters', () => {
    expect(() => userName('a:b')).toThrow(/may not contain ":" or spaces/);
    expect(() => userName('a b')).toThrow(/may not contain ":" or spaces/);
    expect(() => userName('a\u00a0b')).toThrow(/may not contain ":" or spaces/);
    expect(() => userName('')).toThrow(/1 to 64 characters/);
    expect(() => userName('x'.repeat(65))).toThrow(/1 to 64 characters/);
    // 64 characters once composed, though 128 code points as given.
    expect(userName('e\u0301'.repeat(64))).toBe('\u00e9'.repeat(64));
  });
});

describe('printableName', () => {
  it('shows what a name stored before the rule hides', () => {
    expect(printableName(NFC)).toBe(NFC);
    expect(printableName(NFD)).toBe(`${NFD} (not in NFC)`);
    expect(printableName('bob\u200b')).toBe('bob<U+200B>');
    expect(printableName('admin\u202etxt')).toBe('admin<U+202E>txt');
  });
});
