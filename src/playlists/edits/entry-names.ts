/** How the API names an entry: `e` and its number in the playlist (opaque to clients). */
export const entryName = (entry: number): string => `e${entry}`;

const ENTRY = /^e([1-9][0-9]{0,14})$/;

/** The entry an API name stands for; undefined for a name no entry has. */
export function entryNumber(name: string): number | undefined {
  const found = ENTRY.exec(name);
  return found === null ? undefined : Number(found[1]);
}
