/**
 * How `--ab` and `--scale` (compare.ts) turn rounds into a verdict. Each round is an independent
 * repeat (fresh processes, fresh database copies), so its change from side A to side B is one
 * sample, and the rounds' mean change comes with a 95 % confidence interval (Student's t): the
 * range a change must clear before the run can say it is real, or within a target.
 */

/**
 * A change as a fraction (−0.05 is 5 % lower) over `n` rounds, with its 95 % interval (NaN with
 * fewer than 2 rounds; the mean is NaN with none).
 */
export interface Estimate {
  n: number;
  mean: number;
  low: number;
  high: number;
}

/** Two-sided 95 % quantiles of Student's t for 1 to 30 degrees of freedom. */
const t95 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145,
  2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048,
  2.045, 2.042,
];

/** The mean of `samples` and its 95 % confidence interval. */
export function meanWithInterval(samples: number[]): Estimate {
  const n = samples.length;
  const mean = n === 0 ? Number.NaN : samples.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { n, mean, low: Number.NaN, high: Number.NaN };
  const variance = samples.reduce((sum, x) => sum + (x - mean) ** 2, 0) / (n - 1);
  // Past 30 degrees of freedom, 30's quantile: slightly wider than the exact one, never narrower.
  const t = t95[Math.min(n - 1, t95.length) - 1] as number;
  const half = t * Math.sqrt(variance / n);
  return { n, mean, low: mean - half, high: mean + half };
}

/** What a round's turns of one side add up to. */
export interface Turn {
  round: number;
  requestsPerSecond: number;
  totalRequests: number;
  eventLoopUsPerRequest: number | null;
}

/**
 * Requests/s over a round's turns (all of one length) and event-loop µs over all their requests;
 * turns without a figure (no request, no /proc) are left out, and a round without any gives NaN.
 */
function roundFigures(turns: Turn[]): { requestsPerSecond: number; eventLoopUs: number } {
  const measured = turns.filter(
    (turn): turn is Turn & { eventLoopUsPerRequest: number } =>
      turn.totalRequests > 0 && turn.eventLoopUsPerRequest !== null,
  );
  const requests = measured.reduce((n, turn) => n + turn.totalRequests, 0);
  return {
    requestsPerSecond: turns.reduce((n, turn) => n + turn.requestsPerSecond, 0) / turns.length,
    eventLoopUs:
      requests === 0
        ? Number.NaN
        : measured.reduce((n, turn) => n + turn.eventLoopUsPerRequest * turn.totalRequests, 0) /
          requests,
  };
}

/** `to / from − 1`, or nothing when either side has no usable figure. */
function change(from: number, to: number): number[] {
  const ratio = to / from - 1;
  return from > 0 && Number.isFinite(ratio) ? [ratio] : [];
}

/**
 * Per round, side B's change from side A, in requests/s and in event-loop µs per request. A round
 * where a figure is missing on either side gives no change for that figure.
 */
export function changesPerRound(
  a: Turn[],
  b: Turn[],
): { requestsPerSecond: number[]; eventLoopUs: number[] } {
  const rounds = [...new Set(a.map((turn) => turn.round))].sort((x, y) => x - y);
  const changes = { requestsPerSecond: [] as number[], eventLoopUs: [] as number[] };
  for (const round of rounds) {
    const inRound = (turns: Turn[]) => turns.filter((turn) => turn.round === round);
    if (inRound(b).length === 0) continue;
    const [from, to] = [roundFigures(inRound(a)), roundFigures(inRound(b))];
    changes.requestsPerSecond.push(...change(from.requestsPerSecond, to.requestsPerSecond));
    changes.eventLoopUs.push(...change(from.eventLoopUs, to.eventLoopUs));
  }
  return changes;
}
