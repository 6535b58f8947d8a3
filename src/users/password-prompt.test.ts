import { describe, expect, it } from 'vitest';
import { askNewPassword } from './password-prompt.js';

/** A prompt that answers from a script and records what was asked and said. */
function scripted(answers: string[]) {
  const asked: string[] = [];
  const told: string[] = [];
  const ask = (message: string) => {
    asked.push(message);
    const answer = answers.shift();
    return answer === undefined ? Promise.reject(new Error('asked once too often')) : Promise.resolve(answer);
  };
  return { ask, tell: (line: string) => told.push(line), asked, told };
}

const FIRST = 'Password (at least 12 characters):';

describe('askNewPassword', () => {
  it('takes the password when both typings agree, saying the rule as it asks', async () => {
    const prompt = scripted(['s3cret enough', 's3cret enough']);
    await expect(askNewPassword(prompt.ask, prompt.tell)).resolves.toBe('s3cret enough');
    expect(prompt.asked).toEqual([FIRST, 'Password again:']);
    expect(prompt.told).toEqual([]);
  });

  it('asks again when they differ', async () => {
    const prompt = scripted(['one long secret', 'two long secret', 'three long secret', 'three long secret']);
    await expect(askNewPassword(prompt.ask, prompt.tell)).resolves.toBe('three long secret');
    expect(prompt.asked).toHaveLength(4);
    expect(prompt.told).toEqual(['The two passwords differ; try again (2 more).']);
  });

  it('gives up after three misses', async () => {
    const prompt = scripted(['a long secret', 'b', 'c long secret', 'd', 'e long secret', 'f', 'g', 'g']);
    await expect(askNewPassword(prompt.ask, prompt.tell)).rejects.toThrow('The two passwords differed 3 times.');
    expect(prompt.asked).toHaveLength(6);
  });

  it('refuses a password shorter than 12 characters at once, stating the rule, and asks again', async () => {
    const prompt = scripted(['secret', 'long enough now', 'long enough now']);
    await expect(askNewPassword(prompt.ask, prompt.tell)).resolves.toBe('long enough now');
    expect(prompt.asked).toEqual([FIRST, FIRST, 'Password again:']);
    expect(prompt.told).toEqual([
      'A new password needs at least 12 characters; this one has 6. A few words in a row make one that is easy to ' +
        'type. Please try again (2 more).',
    ]);
  });

  it('gives up with the rule when the last try is too short', async () => {
    const prompt = scripted(['short', 'a long secret', 'b long secret', 'eleven char']);
    await expect(askNewPassword(prompt.ask, prompt.tell)).rejects.toThrow(
      'A new password needs at least 12 characters; this one has 11.',
    );
    expect(prompt.told).toHaveLength(2);
    expect(prompt.told[1]).toBe('The two passwords differ; try again (1 more).');
  });
});
