/** `GET …/entries`' body. */
export interface EntriesBody {
  id: number;
  name: string;
  version: number;
  entries: { entry: string; id: number; title: string; artist: string }[];
}

/** One op's result in a merged edit's answer. */
export type OpResult =
  { applied: true; entries?: string[] } | { applied: false; reason: 'removed' | 'conflict'; message: string };

/** `POST …/edits`' body. */
export interface EditsBody {
  playlist: EntriesBody;
  results: OpResult[];
}
