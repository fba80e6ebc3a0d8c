import {
  arches,
  channels,
  platforms,
  rolloutRange,
  rolloutSteps,
} from "../../src/contracts/vocabulary.js";

const list = (values: readonly string[]) => `[${values.map((v) => JSON.stringify(v)).join(", ")}]`;

/** The text of packages/publish/src/targets.ts, generated from the server's vocabulary. */
export function publishVocabularySource(): string {
  return [
    "// Generated from the server's vocabulary (src/contracts/vocabulary.ts) by `npm run contracts`;",
    "// do not edit. test/cli/publish-vocabulary.test.ts fails when this file and it disagree.",
    "",
    "/** The platforms and arches a release entry is published for, the channels, the rollouts. */",
    `export const platforms = ${list(platforms)} as const;`,
    "export type Platform = (typeof platforms)[number];",
    "",
    `export const arches = ${list(arches)} as const;`,
    "export type Arch = (typeof arches)[number];",
    "",
    `export const channels = ${list(channels)} as const;`,
    "export type Channel = (typeof channels)[number];",
    "",
    "/** A rollout's share of machines, or the hours between its steps, and its number of steps. */",
    `export const rolloutRange = ${JSON.stringify(rolloutRange)} as const;`,
    `export const rolloutSteps = ${rolloutSteps};`,
    "",
  ].join("\n");
}
