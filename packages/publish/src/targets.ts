// Generated from the server's vocabulary (src/contracts/vocabulary.ts) by `npm run contracts`;
// do not edit. test/cli/publish-vocabulary.test.ts fails when this file and it disagree.

/** The platforms and arches a release entry is published for, the channels, the rollouts. */
export const platforms = ["WINDOWS", "MACOS", "LINUX"] as const;
export type Platform = (typeof platforms)[number];

export const arches = ["X64", "ARM64"] as const;
export type Arch = (typeof arches)[number];

export const channels = ["STABLE", "BETA", "ALPHA"] as const;
export type Channel = (typeof channels)[number];

/** A rollout's share of machines, or the hours between its steps, and its number of steps. */
export const rolloutRange = {
  minPercent: 1,
  maxPercent: 100,
  minStepHours: 1,
  maxStepHours: 720,
} as const;
export const rolloutSteps = 7;
