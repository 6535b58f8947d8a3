/**
 * Rules with a nested group and two sort keys: Jazz over five minutes whose artist contains "davis" or whose title
 * starts with "so", newest first. Read by the rules' unit tests (src/smart/rules.test.ts) and compiled against a
 * catalog in test/smart/rules-compile.test.ts.
 */
export const NESTED_RULES = {
  match: 'all',
  conditions: [
    { field: 'genre', op: 'is', value: 'Jazz' },
    { field: 'duration', op: 'gt', value: 300 },
    {
      match: 'any',
      conditions: [
        { field: 'artist', op: 'contains', value: 'davis' },
        { field: 'title', op: 'startsWith', value: 'so' },
      ],
    },
  ],
  sort: [{ field: 'added', order: 'desc' }, { field: 'title' }],
  limit: 50,
};
