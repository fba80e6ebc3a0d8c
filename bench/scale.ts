import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import {
  alternate,
  type CompareOptions,
  report,
  type Side,
  seededSide,
  seedWith,
} from "./compare.js";
import type { DatasetShape } from "./dataset.js";
import { log, measureBaselineServer, onCleanup } from "./processes.js";

/**
 * `npm run bench -- --scale 10000,1000000`: this checkout on two data set sizes in the same run
 * (compare.ts), for the target "validate at 1 M licenses within 10 % of validate at 10 k". Two
 * separate runs minutes apart cannot resolve 10 % on a shared machine (docs/performance.md): the
 * host's speed moves more than that between them. Here the sizes take turns, and the bare
 * baseline runs before and after, so each size is also reported as a ratio to it.
 */
export interface ScaleOptions extends CompareOptions {
  shapes: [DatasetShape, DatasetShape];
}

export async function runScale(options: ScaleOptions): Promise<void> {
  const work = mkdtempSync(join(os.tmpdir(), "shipkey-bench-scale-"));
  onCleanup(() => rmSync(work, { recursive: true, force: true }));
  const root = process.cwd();
  const sides: Side[] = [];
  for (const shape of options.shapes) {
    const label = `${shape.licenses} licenses`;
    const template = join(work, `template-${sides.length}.db`);
    log(`seeding ${shape.licenses} licenses, ${shape.machines} active machines`);
    const apiKey = await seedWith(root, `sqlite:${template}`, shape);
    sides.push(seededSide({ label, root, template, apiKey, shape }));
  }
  const [small, large] = sides as [Side, Side];
  const baseline = () =>
    measureBaselineServer({
      scenario: "baseline",
      apiKey: small.apiKey,
      seconds: options.durationSeconds,
      connections: options.connections,
      shape: small.shape,
    });
  log("baseline (bare node:http) ...");
  const before = await baseline();
  const results = await alternate([small, large], options, work);
  log("baseline again (drift check) ...");
  const after = await baseline();
  const baselineRequestsPerSecond = (before.requestsPerSecond + after.requestsPerSecond) / 2;
  log(
    `baseline: ${before.requestsPerSecond.toFixed(0)} req/s before, ` +
      `${after.requestsPerSecond.toFixed(0)} after (${before.eventLoopUsPerRequest} / ` +
      `${after.eventLoopUsPerRequest} loop µs/req)`,
  );
  report("scale", results, options, {
    shapes: options.shapes,
    baseline: { before, after },
    baselineRequestsPerSecond,
  });
}
