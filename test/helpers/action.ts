import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { parse } from "yaml";
import { testEnvironment } from "./environment.js";

interface ActionManifest {
  inputs: Record<string, { default?: string }>;
  runs: { steps: Array<{ env: Record<string, string>; run: string }> };
}

export interface ActionRun {
  code: number;
  stdout: string;
  stderr: string;
  /** The step's outputs, as it wrote them to $GITHUB_OUTPUT. */
  outputs: Record<string, string>;
}

/**
 * Runs the repository's action (action.yml's one step) as a GitHub runner does: the step's
 * `run:` in bash, in `cwd` (the job's workspace), with each `${{ inputs.name }}` of the step's
 * environment set from `inputs` or the input's default, and GITHUB_ACTION_PATH at the
 * repository's root (the action's checkout at its ref). PATH leads to this node, as
 * actions/setup-node makes it lead to the job's; no registry answers (npm_config_registry is a
 * closed port) and `npm` and `npx` on the PATH fail, so nothing can be installed.
 */
export async function runAction(inputs: Record<string, string>, cwd: string): Promise<ActionRun> {
  const action = parse(readFileSync("action.yml", "utf8")) as ActionManifest;
  const [step] = action.runs.steps;
  if (!step) throw new Error("action.yml has no step");
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(step.env)) {
    const input = /^\$\{\{ inputs\.([a-z-]+) \}\}$/.exec(value)?.[1];
    if (input === undefined) throw new Error(`${name} is not an input`);
    env[name] = inputs[input] ?? action.inputs[input]?.default ?? "";
  }
  for (const input of Object.keys(inputs)) {
    if (!(input in action.inputs)) throw new Error(`action.yml has no input ${input}`);
  }
  const runner = mkdtempSync(join(tmpdir(), "shipkey-action-runner-"));
  try {
    const noRegistry = join(runner, "bin");
    mkdirSync(noRegistry);
    for (const tool of ["npm", "npx"]) {
      writeFileSync(join(noRegistry, tool), `#!/bin/sh\necho "${tool} was run" >&2\nexit 97\n`);
      chmodSync(join(noRegistry, tool), 0o755);
    }
    const output = join(runner, "github-output");
    writeFileSync(output, "");
    const path = [noRegistry, dirname(process.execPath), process.env.PATH ?? ""].join(delimiter);
    let exit: Omit<ActionRun, "outputs">;
    try {
      const { stdout, stderr } = await promisify(execFile)("bash", ["-c", step.run], {
        cwd,
        env: testEnvironment({
          ...env,
          PATH: path,
          GITHUB_ACTION_PATH: resolve("."),
          GITHUB_OUTPUT: output,
          RUNNER_TEMP: runner,
          npm_config_registry: "http://127.0.0.1:9/",
          npm_config_offline: "true",
        }),
      });
      exit = { code: 0, stdout, stderr };
    } catch (err) {
      const failed = err as { code: number; stdout: string; stderr: string };
      exit = { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
    return { ...exit, outputs: parseOutputs(readFileSync(output, "utf8")) };
  } finally {
    rmSync(runner, { recursive: true, force: true });
  }
}

/** $GITHUB_OUTPUT's `name=value` lines and `name<<DELIMITER` blocks. */
function parseOutputs(text: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const block = /^([\w-]+)<<(.+)$/.exec(line);
    if (block?.[1] && block[2]) {
      const end = lines.indexOf(block[2], i + 1);
      if (end < 0) throw new Error(`output ${block[1]} has no end ${block[2]}`);
      outputs[block[1]] = lines.slice(i + 1, end).join("\n");
      i = end;
    } else if (line.includes("=")) {
      outputs[line.slice(0, line.indexOf("="))] = line.slice(line.indexOf("=") + 1);
    }
  }
  return outputs;
}
