import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import {
  alternate,
  baselineSide,
  type CompareOptions,
  report,
  seededSide,
  seedWith,
} from "./compare.js";
import type { DatasetShape } from "./dataset.js";
import { log, onCleanup } from "./processes.js";

/**
 * `npm run bench -- --rounds N`: each scenario's ratio to the bare baseline with a 95 % interval,
 * for the targets written as ratios ("validate ≥ 0.6× baseline"). A full run measures the
 * baseline once before and once after all scenarios, minutes away from most of them, and one
 * such run is one sample: on a shared machine the same build gave validate 0.52×, 0.65× and
 * 0.73× in three (docs/performance.md). Here the baseline and the service take turns of a few
 * seconds within each round (compare.ts), and the rounds give the interval.
 */
export interface RoundsOptions extends CompareOptions {
  shape: DatasetShape;
}

export async function runRounds(options: RoundsOptions): Promise<void> {
  const work = mkdtempSync(join(os.tmpdir(), "shipkey-bench-rounds-"));
  onCleanup(() => rmSync(work, { recursive: true, force: true }));
  const root = process.cwd();
  const template = join(work, "template.db");
  log(`seeding ${options.shape.licenses} licenses, ${options.shape.machines} active machines`);
  const apiKey = await seedWith(root, template, options.shape);
  const sides = [
    baselineSide(apiKey, options.shape),
    seededSide({ label: "shipkey", root, template, apiKey, shape: options.shape }),
  ] as const;
  report("rounds", await alternate([...sides], options, work), options, { shape: options.shape });
}
