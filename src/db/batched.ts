import DataLoader from 'dataloader';

/** The most reads one batched statement makes. */
const READS_PER_STATEMENT = 256;

/**
 * Reads of the requests that arrive in one turn of the event loop, made as one statement, in one round trip
 * (PostgreSQL): `read` gets the turn's keys and answers a row for each key it found, naming the key by its place in
 * the batch from 1 (`n`, as `unnest(...) WITH ORDINALITY` numbers them). Each read is still made after its request
 * arrived: nothing is kept between turns. Undefined for a key with no row.
 */
export function batchedPerTurn<K, R extends { readonly n: number | string }>(
  read: (keys: readonly K[]) => Promise<readonly R[]>,
): (key: K) => Promise<Omit<R, 'n'> | undefined> {
  const loader = new DataLoader<K, Omit<R, 'n'> | undefined>(
    async (keys) => {
      // Filled, not sparse: DataLoader takes an array with a hole at its end for one of the wrong length.
      const found = keys.map((): Omit<R, 'n'> | undefined => undefined);
      for (const { n, ...row } of await read(keys)) found[Number(n) - 1] = row;
      return found;
    },
    { cache: false, maxBatchSize: READS_PER_STATEMENT, batchScheduleFn: (dispatch) => setImmediate(dispatch) },
  );
  return (key) => loader.load(key);
}
