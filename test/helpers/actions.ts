import type { Actor } from "../../src/domain/audit/audit-log.js";

/** Who arranges a test's data through the actions: the CLI, as an operator would. */
export const testActor: Actor = { type: "cli", id: null, label: "test", ip: null };
