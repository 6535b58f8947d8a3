import { describe, expect, it } from 'vitest';
import { PASSWORD_MIN_LENGTH, checkNewPassword, newPasswordProblem } from './password-rule.js';
import { UserError } from './user-name.js';

describe('the rule for new passwords', () => {
  it('is at least 12 characters', () => {
    expect(PASSWORD_MIN_LENGTH).toBe(12);
  });

  it('takes 12 characters and more, spaces included', () => {
    expect(newPasswordProblem('correct hors')).toBeUndefined();
    expect(newPasswordProblem('correct horse battery staple')).toBeUndefined();
    expect(() => {
      checkNewPassword('twelve chars');
    }).not.toThrow();
  });

  it('refuses 11 characters, saying the rule and the length it counted', () => {
    expect(newPasswordProblem('right horse')).toBe(
      'A new password needs at least 12 characters; this one has 11. A few words in a row make one that is easy to type.',
    );
    expect(() => {
      checkNewPassword('secret');
    }).toThrow(UserError);
    expect(() => {
      checkNewPassword('secret');
    }).toThrow(/at least 12 characters; this one has 6\./);
  });

  it('counts characters, not bytes or UTF-16 units', () => {
    // Eleven characters of two or four bytes each: too short, however many bytes they take.
    expect(newPasswordProblem('ééééééééééé')).toMatch(/this one has 11\./);
    expect(newPasswordProblem('🎵'.repeat(11))).toMatch(/this one has 11\./);
    expect(newPasswordProblem('🎵'.repeat(12))).toBeUndefined();
  });
});
