import { Readable } from "node:stream";
import type { CommandContext } from "../../src/cli/commands/shared.js";
import { runCli as run } from "../../src/cli/run.js";
import { testEnvironment } from "./environment.js";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a `shipkey` command line in this process (the CLI's own runCli, as bin/shipkey.js runs
 * it) on the database at `databaseUrl`, with `input` on its standard input and `env` over
 * testEnvironment() (none of the shell's configuration); resolves with its exit status and
 * output, whatever the status.
 * test/cli/cli-binary.process.test.ts runs the binary itself.
 */
export async function runCli(
  databaseUrl: string,
  args: string[],
  { input = "", env = {} }: { input?: string; env?: Record<string, string | undefined> } = {},
): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    env: testEnvironment({ DATABASE_URL: databaseUrl, ...env }),
    stdin: Readable.from([input]),
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

/**
 * A context for calling a command's run() directly: `env` over testEnvironment(), no input,
 * warnings kept.
 */
export function commandContext(env: Record<string, string> = {}): CommandContext & {
  warnings: string[];
} {
  const warnings: string[] = [];
  return {
    env: testEnvironment(env),
    stdin: Readable.from([]),
    warn: (line) => warnings.push(line),
    warnings,
  };
}
