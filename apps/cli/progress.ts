/** How long work may take before its progress is shown: `SLUICE_PD_PROGRESS_AFTER_MS`, default 1 s. */
function progressDelayMs(): number {
  const v = Number(process.env.SLUICE_PD_PROGRESS_AFTER_MS);
  return Number.isFinite(v) && v >= 0 ? v : 1000;
}

/**
 * Shows on stderr that `label` is still going while `work` runs: a ticking counter on a
 * terminal, one line (and its end) otherwise, and nothing for work done before the delay
 * (`SLUICE_PD_PROGRESS_AFTER_MS`, default 1 s). stdout is left to the command's result.
 */
export async function withProgress<T>(label: string, work: Promise<T>): Promise<T> {
  const started = Date.now();
  const tty = process.stderr.isTTY === true;
  let shown = false;
  const secs = () => `${Math.round((Date.now() - started) / 1000)} s`;
  const tick = () => {
    if (tty) process.stderr.write(`\r${label}... ${secs()}`);
    else if (!shown) process.stderr.write(`${label}...\n`);
    shown = true;
  };
  const first = setTimeout(tick, progressDelayMs());
  const every = tty ? setInterval(() => shown && tick(), 1000) : undefined;
  try {
    const value = await work;
    if (shown) process.stderr.write(tty ? `\r${label}... done in ${secs()}\n` : `${label}: done in ${secs()}\n`);
    return value;
  } catch (e) {
    if (shown && tty) process.stderr.write('\n');
    throw e;
  } finally {
    clearTimeout(first);
    if (every) clearInterval(every);
  }
}
