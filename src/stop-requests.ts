/**
 * The same signal again within this time is one request delivered twice, not a second request: Ctrl-C in a terminal
 * (or a supervisor that signals the process group) reaches both `npm start` and the service, and npm passes its copy
 * on, a few milliseconds later.
 */
export const SIGNAL_COPY_MS = 250;

/** When run by npm, how often the service looks whether the process that started it is still there. */
export const PARENT_CHECK_MS = 500;

/** Why the service is asked to stop: a signal, or the exit of the npm process (or its shell) that started it. */
export type StopRequest = NodeJS.Signals | 'parent exited';

/** Tells, for each signal and the time it came (ms), whether it is a new request rather than a copy of the last. */
export function signalCopies(copyMs = SIGNAL_COPY_MS): (signal: NodeJS.Signals, at: number) => boolean {
  let last: { signal: NodeJS.Signals; at: number } | undefined;
  return (signal, at) => {
    if (last !== undefined && last.signal === signal && at - last.at < copyMs) return false;
    last = { signal, at };
    return true;
  };
}

/**
 * Calls `onStop` for each SIGTERM and SIGINT that is not a copy of the one before, and, with `watchParent`, once the
 * parent process has exited. `npx mixtape serve` runs the service under a shell that npm started: npm passes SIGTERM
 * on to that shell, which exits without passing it on; the service, left without its parent, sees that here.
 */
export function onStopRequests(onStop: (request: StopRequest) => void, options: { watchParent: boolean }): void {
  const isNew = signalCopies();
  const onSignal = (signal: NodeJS.Signals) => {
    if (isNew(signal, performance.now())) onStop(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  if (!options.watchParent) return;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onStop('parent exited');
  }, PARENT_CHECK_MS);
  timer.unref();
}
