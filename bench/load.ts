import autocannon from "autocannon";
import type { DatasetShape } from "./dataset.js";
import { requestsFor, type ScenarioName } from "./scenarios.js";

/**
 * The load generator, run as its own process so it does not share a CPU queue with the
 * orchestrator. Input: one JSON argument; output: one JSON document on stdout.
 */
export interface LoadOptions {
  url: string;
  scenario: ScenarioName;
  shape: DatasetShape;
  apiKey: string;
  durationSeconds: number;
  connections: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  totalRequests: number;
  latencyMs: { p50: number; p99: number; max: number };
  /** Non-2xx answers, connection errors and timeouts. */
  errors: number;
  statusCodes: Record<string, number>;
}

const options = JSON.parse(process.argv[2] ?? "{}") as LoadOptions;

const result = await autocannon({
  url: options.url,
  connections: options.connections,
  duration: options.durationSeconds,
  requests: requestsFor(options.scenario, options.shape, options.apiKey),
  timeout: 10,
});

const output: LoadResult = {
  requestsPerSecond: result.requests.total / result.duration,
  totalRequests: result.requests.total,
  latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
  errors: result.non2xx + result.errors + result.timeouts,
  statusCodes: Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, stats.count ?? 0]),
  ),
};
process.stdout.write(`${JSON.stringify(output)}\n`);
