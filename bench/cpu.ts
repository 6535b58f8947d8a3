/**
 * The CPU time that serving took, read from Linux's /proc: the service's process (every thread), and on PostgreSQL
 * the server processes connected to the data set's database (their process title names it). Throughput moves with
 * whatever else the machine runs; the CPU time a request costs moves far less, so it tells two commits apart on a
 * machine that is not quiet.
 */
import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks a second (`getconf CLK_TCK`), 100 on Linux. */
const TICKS_PER_SECOND = 100;

/** CPU time so far, in ms: the service's and its database server processes'. */
export interface CpuReading {
  readonly serviceMs: number;
  readonly databaseMs: number;
}

/** CPU ms a request, over a level: (after − before) ÷ responses. */
export interface CpuPerRequest {
  readonly serviceMs: number;
  readonly databaseMs: number;
}

const BACKEND = /^postgres: (?:\S+: )?\S+ (\S+) \S+\(\d+\)/;

/** utime and stime of a process, in ms (in clock ticks, 10 ms here); 0 once it is gone. */
export function processCpuSplitMs(pid: number): { readonly user: number; readonly system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      user: (Number(fields[11]) * 1000) / TICKS_PER_SECOND,
      system: (Number(fields[12]) * 1000) / TICKS_PER_SECOND,
    };
  } catch {
    return { user: 0, system: 0 };
  }
}

/** utime + stime of a process, in ms; 0 once it is gone. */
export function processCpuMs(pid: number): number {
  const { user, system } = processCpuSplitMs(pid);
  return user + system;
}

/**
 * The PostgreSQL server processes serving `database`, by their title (`postgres: [cluster: ]user database host(port)
 * state`). The server's own processes (the WAL writer, the checkpointer) work for every database and are left out.
 */
function backendsOf(database: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const title = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (BACKEND.exec(title)?.[1] === database) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Reads the CPU time of the service (pid) and, given a database name, of the PostgreSQL processes serving it. */
export function readCpu(servicePid: number | undefined, database: string | undefined): CpuReading {
  const serviceMs = servicePid === undefined ? 0 : processCpuMs(servicePid);
  const databaseMs = database === undefined ? 0 : backendsOf(database).reduce((sum, pid) => sum + processCpuMs(pid), 0);
  return { serviceMs, databaseMs };
}

export function perRequest(before: CpuReading, after: CpuReading, responses: number): CpuPerRequest | undefined {
  if (responses === 0) return undefined;
  return {
    serviceMs: (after.serviceMs - before.serviceMs) / responses,
    databaseMs: Math.max(0, after.databaseMs - before.databaseMs) / responses,
  };
}
