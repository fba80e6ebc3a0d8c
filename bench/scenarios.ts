import type autocannon from "autocannon";
import {
  benchProducts,
  type DatasetShape,
  licenseKeyFor,
  productFor,
  randomActivatedMachine,
} from "./dataset.js";

export const scenarioNames = [
  "baseline",
  "validate",
  "activate-deactivate",
  "publish",
  "mixed",
] as const;
export type ScenarioName = (typeof scenarioNames)[number];

export interface ScenarioInput {
  shape: DatasetShape;
  apiKey: string;
}

type Request = autocannon.Request;
type Context = Record<string, unknown>;

const json = { "content-type": "application/json" };

function validateRequest(shape: DatasetShape): Partial<Request> {
  return {
    method: "POST",
    path: "/api/license/validate",
    headers: json,
    body: JSON.stringify(randomActivatedMachine(shape)),
  };
}

function activateRequest(shape: DatasetShape, context: Context): Partial<Request> {
  const index = Math.floor(Math.random() * shape.licenses);
  const machineId = `cycle-${process.pid}-${Math.random().toString(36).slice(2)}`;
  context.cycle = { licenseKey: licenseKeyFor(index), machineId };
  return {
    method: "POST",
    path: "/api/license/activate",
    headers: json,
    body: JSON.stringify({
      licenseKey: licenseKeyFor(index),
      machineId,
      productSlug: productFor(index),
      machineName: "Bench machine",
      platform: "Windows 11",
    }),
  };
}

function deactivateRequest(context: Context): Partial<Request> {
  return {
    method: "POST",
    path: "/api/license/deactivate",
    headers: json,
    body: JSON.stringify(context.cycle),
  };
}

// A minisign-sized signature and realistic artifact URLs.
const signature = `untrusted comment: signature from tauri secret key\n${"RUQ".repeat(40)}\ntrusted comment: timestamp:1763737970\tfile:app.msi\n${"ZmFrZQ".repeat(14)}`;
const targets = [
  ["WINDOWS", "X64", "app_x64-setup.msi"],
  ["MACOS", "ARM64", "app_aarch64.app.tar.gz"],
  ["MACOS", "X64", "app_x64.app.tar.gz"],
  ["LINUX", "X64", "app_amd64.AppImage.tar.gz"],
] as const;

let publishCounter = 0;

/** Each new version is published twice in a row: first "created", then "updated". */
function publishRequest(apiKey: string, context: Context): Partial<Request> {
  if (typeof context.version !== "string") {
    context.version = `2.${process.pid}.${publishCounter++}`;
    context.product = benchProducts[publishCounter % benchProducts.length];
  }
  const version = context.version;
  return {
    method: "POST",
    path: "/api/releases/publish",
    headers: { ...json, authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({
      productSlug: context.product,
      version,
      channel: "STABLE",
      releaseNotes: "## Changes\n- Faster sync\n- Fixed a crash when resuming from sleep\n",
      releases: targets.map(([platform, arch, file]) => ({
        platform,
        arch,
        downloadUrl: `https://github.com/example-org/example-app/releases/download/v${version}/${file}`,
        signature,
        fileSize: 50_000_000 + Math.floor(Math.random() * 10_000_000),
      })),
    }),
  };
}

const setup = (build: (context: Context) => Partial<Request>): Request =>
  ({
    setupRequest: (request: Request, context: object) => ({
      ...request,
      ...build(context as Context),
    }),
  }) as Request;

/**
 * autocannon runs each connection through the `requests` list in a loop, with a context that
 * lives for one pass; pairs (activate → deactivate, publish created → updated) share it.
 */
export function requestsFor(name: ScenarioName, { shape, apiKey }: ScenarioInput): Request[] {
  switch (name) {
    case "baseline":
    case "validate":
      return [setup(() => validateRequest(shape))];
    case "activate-deactivate":
      return [setup((c) => activateRequest(shape, c)), setup((c) => deactivateRequest(c))];
    case "publish":
      return [setup((c) => publishRequest(apiKey, c)), setup((c) => publishRequest(apiKey, c))];
    case "mixed":
      // First of a pair: 8 % activate (the second then deactivates it); otherwise both halves
      // draw validate or publish 90:2. Overall: 90 % validate, 8 % activate/deactivate, 2 % publish.
      return [
        setup((c) => {
          const roll = Math.random();
          if (roll < 0.08) return activateRequest(shape, c);
          return drawValidateOrPublish(shape, apiKey, c);
        }),
        setup((c) => (c.cycle ? deactivateRequest(c) : drawValidateOrPublish(shape, apiKey, c))),
      ];
  }
}

function drawValidateOrPublish(
  shape: DatasetShape,
  apiKey: string,
  context: Context,
): Partial<Request> {
  if (Math.random() < 2 / 92) {
    delete context.version; // each mixed publish is a new version
    return publishRequest(apiKey, context);
  }
  return validateRequest(shape);
}
