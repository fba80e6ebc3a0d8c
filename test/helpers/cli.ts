import { Readable } from "node:stream";
import type { CommandContext } from "../../src/cli/commands/shared.js";
import { runCli as run } from "../../src/cli/run.js";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a `shipkey` command line in this process (the CLI's own runCli, as bin/shipkey.js runs
 * it) on the database at `databaseUrl`, with `input` on its standard input and `env` over this
 * process's environment; resolves with its exit status and output, whatever the status.
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
    env: { ...process.env, DATABASE_URL: databaseUrl, ...env },
    stdin: Readable.from([input]),
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

/** A context for calling a command's run() directly: this environment, no input, warnings kept. */
export function commandContext(env: Record<string, string> = {}): CommandContext & {
  warnings: string[];
} {
  const warnings: string[] = [];
  return {
    env: { ...process.env, ...env },
    stdin: Readable.from([]),
    warn: (line) => warnings.push(line),
    warnings,
  };
}
