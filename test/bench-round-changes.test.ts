import { describe, expect, it } from "vitest";
import { changesPerRound, meanWithInterval, type Turn } from "../bench/round-changes.js";

describe("the benchmark's per-round changes and their 95 % interval (bench/round-changes.ts)", () => {
  it("gives the mean with Student's t interval: 1..5 is 3 ± 2.776 × √(2.5 / 5)", () => {
    const e = meanWithInterval([1, 2, 3, 4, 5]);
    expect(e.mean).toBe(3);
    expect(e.high - e.mean).toBeCloseTo(2.776 * Math.sqrt(2.5 / 5), 10);
    expect(e.mean - e.low).toBeCloseTo(e.high - e.mean, 10);
  });

  it("has no interval for one round, and a wider one for fewer rounds of the same spread", () => {
    expect(Number.isNaN(meanWithInterval([0.1]).low)).toBe(true);
    const width = (samples: number[]) => {
      const e = meanWithInterval(samples);
      return e.high - e.low;
    };
    expect(width([1, 3])).toBeGreaterThan(width([1, 3, 1, 3, 1, 3]));
  });

  it("compares side B with side A round by round, loop µs weighted by each turn's requests", () => {
    const turn = (round: number, rps: number, loopUs: number, requests: number): Turn => ({
      round,
      requestsPerSecond: rps,
      eventLoopUsPerRequest: loopUs,
      totalRequests: requests,
    });
    const a = [turn(0, 100, 50, 1000), turn(0, 100, 50, 1000), turn(1, 200, 40, 2000)];
    const b = [turn(0, 90, 60, 3000), turn(0, 90, 40, 1000), turn(1, 220, 44, 2000)];
    const changes = changesPerRound(a, b);
    expect(changes.requestsPerSecond.map((c) => Number(c.toFixed(6)))).toEqual([-0.1, 0.1]);
    // Round 0, side B: (60 × 3000 + 40 × 1000) / 4000 = 55 µs against 50.
    expect(changes.eventLoopUs.map((c) => Number(c.toFixed(6)))).toEqual([0.1, 0.1]);
  });

  it("leaves out a round's figure that one side lacks, instead of turning the mean into NaN", () => {
    const turn = (round: number, rps: number, loopUs: number | null, requests: number): Turn => ({
      round,
      requestsPerSecond: rps,
      eventLoopUsPerRequest: loopUs,
      totalRequests: requests,
    });
    // Round 0: no /proc figure on side B; round 1: side A answered nothing.
    const a = [turn(0, 100, 50, 1000), turn(1, 0, null, 0), turn(2, 100, 50, 1000)];
    const b = [turn(0, 110, null, 1100), turn(1, 90, 40, 900), turn(2, 120, 60, 1200)];
    const changes = changesPerRound(a, b);
    expect(changes.requestsPerSecond.map((c) => Number(c.toFixed(6)))).toEqual([0.1, 0.2]);
    expect(changes.eventLoopUs.map((c) => Number(c.toFixed(6)))).toEqual([0.2]);
    const none = meanWithInterval([]);
    expect([none.n, Number.isNaN(none.mean), Number.isNaN(none.low)]).toEqual([0, true, true]);
  });
});
