import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DatabaseFaults } from "../../src/http/database-faults.js";

function collectingLog() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: "info" }, stream), lines };
}

const fault = (code: string) => Object.assign(new Error(`failed: ${code}`), { code });

describe("the log of database faults", () => {
  afterEach(() => vi.useRealTimers());

  it("writes one line per cause per window and counts the failures in between", async () => {
    vi.useFakeTimers({ now: 0, toFake: ["Date"] });
    const { log, lines } = collectingLog();
    const faults = new DatabaseFaults(log, 10_000);

    for (let i = 0; i < 5; i++) faults.report(fault("57P01"), "a");
    vi.setSystemTime(2_000);
    for (let i = 0; i < 7; i++) faults.report(fault("53300"), "b");
    vi.setSystemTime(9_999);
    faults.report(fault("57P01"), "a");
    vi.setSystemTime(10_000);
    faults.report(fault("57P01"), "a");
    await new Promise((resolve) => setImmediate(resolve));

    expect(lines.map((l) => [l.msg, l.code, l.failuresSinceLastLine])).toEqual([
      ["database unavailable", "57P01", 0],
      ["database unavailable", "53300", 0],
      ["database unavailable", "57P01", 5],
    ]);
    expect(faults.failedWithin(1)).toBe(true);
  });

  it("ignores errors that do not say the database is unavailable", () => {
    const { log, lines } = collectingLog();
    const faults = new DatabaseFaults(log);
    expect(faults.reportIfUnavailable(fault("23505"), "a")).toBe(false);
    expect(
      faults.reportIfUnavailable(Object.assign(fault("ECONNRESET"), { statusCode: 400 }), "a"),
    ).toBe(false);
    expect(lines).toEqual([]);
    expect(faults.failedWithin(60_000)).toBe(false);
  });
});
