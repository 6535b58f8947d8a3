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

describe('askNewPassword', () => {
  it('takes the password when both typings agree', async () => {
    const prompt = scripted(['s3cret', 's3cret']);
    await expect(askNewPassword(prompt.ask, prompt.tell)).resolves.toBe('s3cret');
    expect(prompt.asked).toEqual(['Password:', 'Password again:']);
    expect(prompt.told).toEqual([]);
  });

  it('asks again when they differ', async () => {
    const prompt = scripted(['one', 'two', 'three', 'three']);
    await expect(askNewPassword(prompt.ask, prompt.tell)).resolves.toBe('three');
    expect(prompt.asked).toHaveLength(4);
    expect(prompt.told).toEqual(['The two passwords differ; try again (2 more).']);
  });

  it('gives up after three misses', async () => {
    const prompt = scripted(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'g']);
    await expect(askNewPassword(prompt.ask, prompt.tell)).rejects.toThrow('The two passwords differed 3 times.');
    expect(prompt.asked).toHaveLength(6);
  });
});
