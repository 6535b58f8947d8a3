import { expect, it } from 'vitest';
import { preferredWait, prefersMinimal } from './prefer.js';

it("reads Prefer's wait in whole seconds, at most 60, and ignores what it does not understand", () => {
  expect(preferredWait(undefined)).toBeUndefined();
  expect(preferredWait('wait=10')).toBe(10);
  expect(preferredWait('respond-async, wait=5')).toBe(5);
  expect(preferredWait('return=minimal; foo, WAIT = "7"')).toBe(7);
  expect(preferredWait(['handling=lenient', 'wait=3'])).toBe(3);
  expect(preferredWait('wait=600')).toBe(60);
  for (const ignored of ['wait=0', 'wait=-1', 'wait=1.5', 'wait=soon', 'wait', 'return=minimal']) {
    expect(preferredWait(ignored)).toBeUndefined();
  }
});

it("reads Prefer's return=minimal among other preferences, the first return counting, and ignores other values", () => {
  expect(prefersMinimal(undefined)).toBe(false);
  expect(prefersMinimal('return=minimal')).toBe(true);
  expect(prefersMinimal('return=minimal, wait=5')).toBe(true);
  expect(prefersMinimal(['wait=5', 'RETURN = "minimal"; foo'])).toBe(true);
  for (const ignored of ['return=representation', 'return=representation, return=minimal', 'return', 'return=min']) {
    expect(prefersMinimal(ignored)).toBe(false);
  }
  expect(preferredWait('return=minimal, wait=5')).toBe(5);
});
