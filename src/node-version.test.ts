import { describe, expect, it } from 'vitest';
import { supportedNodeRange, unsupportedNodeMessage } from './node-version.js';

describe('the supported Node.js versions', () => {
  const range = supportedNodeRange();

  it('are read from package.json engines', () => {
    expect(range).toBe('^22.14.0 || ^24.0.0 || >=26.0.0');
  });

  it.each(['v22.14.0', 'v22.23.3', 'v24.0.0', 'v24.21.0', 'v26.10.0', 'v27.0.0'])('accept %s', (version) => {
    expect(unsupportedNodeMessage(version, range)).toBeUndefined();
  });

  it.each(['v20.20.2', 'v22.13.1', 'v23.11.0', 'v25.0.0'])(
    'refuse %s with one line naming the supported ones',
    (version) => {
      expect(unsupportedNodeMessage(version, range)).toBe(
        `mixtape: Node.js ${version} is not supported; use Node.js ^22.14.0, ^24.0.0, >=26.0.0 (package.json engines)`,
      );
    },
  );

  it('include the one running this suite', () => {
    expect(unsupportedNodeMessage(process.version, range)).toBeUndefined();
  });
});
