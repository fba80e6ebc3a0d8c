import autocannon from "autocannon";
import { requestsFor, type ScenarioInput, type ScenarioName } from "./scenarios.js";

/**
 * The load generator, run as its own process so it does not share a CPU queue with the
 * orchestrator. Input: one JSON argument; output: one JSON document on stdout.
 */
export interface LoadOptions extends ScenarioInput {
  url: string;
  scenario: ScenarioName;
  durationSeconds: number;
  connections: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  totalRequests: number;
  latencyMs: { p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
}

const options = JSON.parse(process.argv[2] ?? "{}") as LoadOptions;

const result = await autocannon({
  url: options.url,
  connections: options.connections,
  duration: options.durationSeconds,
  requests: requestsFor(options.scenario, options),
  timeout: 10,
});

const statusCodes: Record<string, number> = {};
for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) {
  statusCodes[code] = stats.count ?? 0;
}
const output: LoadResult = {
  // Requests over the run's measured length; for a run of whole seconds the same as autocannon's
  // average of its per-second samples, and defined for any run.
  requestsPerSecond: result.requests.total / result.duration,
  totalRequests: result.requests.total,
  latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
  non2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
  statusCodes,
};
process.stdout.write(`${JSON.stringify(output)}\n`);
