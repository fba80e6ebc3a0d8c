import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseCommandLine } from "../../src/cli/args.js";
import { allCommandHelp } from "../../src/cli/commands.js";
import { renderCommandHelp, renderUsage } from "../../src/cli/help.js";
import { runCli } from "../helpers/cli.js";

// None of these opens a database: DATABASE_URL names one that must never be created.
const noDatabase = "sqlite:/nonexistent-dir/never-created.db";
const cli = (...args: string[]) => runCli(noDatabase, args);

const packageVersion = (
  JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  }
).version;

/** The fenced block under docs/cli.md's `## Commands` heading. */
function cliSynopsis(): string {
  const doc = readFileSync(new URL("../../docs/cli.md", import.meta.url), "utf8");
  const section = doc.split(/^## Commands$/m)[1];
  const block = section === undefined ? undefined : /```[a-z]*\n([\s\S]*?)```/.exec(section);
  if (block?.[1] === undefined)
    throw new Error("docs/cli.md has no fenced block under ## Commands");
  return block[1];
}

describe("shipkey help (rendered in-process)", () => {
  it("docs/cli.md's synopsis is exactly `shipkey --help`", () => {
    expect(cliSynopsis()).toBe(renderUsage());
  });

  it("the usage lists every command with one line, no line over 100 characters", () => {
    const usage = renderUsage();
    for (const [name, help] of allCommandHelp()) {
      expect(usage).toMatch(new RegExp(`^  ${name} +${escapeRegExp(help.summary)}$`, "m"));
    }
    for (const line of usage.split("\n")) expect(line.length).toBeLessThanOrEqual(100);
  });

  it.each(allCommandHelp())("%s --help: synopsis, options, an example", (name, help) => {
    const text = renderCommandHelp(name, help);
    expect(text.startsWith(`Usage: shipkey ${name}`)).toBe(true);
    expect(text).toContain(`\n\n${help.summary}.\n\nOptions:\n`);
    for (const [option, description] of help.options) {
      expect(text).toMatch(
        new RegExp(`^  ${escapeRegExp(option)}\\s+${escapeRegExp(description)}$`, "m"),
      );
    }
    expect(text).toMatch(/^ {2}--json +print exactly one JSON document on stdout$/m);
    expect(text).toMatch(new RegExp(`\nExample:\n  (\\S+ )*shipkey ${name}[ \n]`));
    for (const line of text.split("\n").filter((l) => !l.startsWith("  shipkey "))) {
      expect(line.length).toBeLessThanOrEqual(100);
    }
  });

  it.each(allCommandHelp())("every option %s's help names is one the CLI accepts", (_, help) => {
    const names = [
      ...`${help.synopsis} ${help.options.map(([o]) => o).join(" ")}`.matchAll(/--[a-z0-9-]+/g),
    ].map((m) => m[0]);
    for (const option of new Set(names)) {
      // A boolean option refuses a value, a string option requires one: either parses one way.
      const parses = [[option], [option, "x"]].some((argv) => {
        try {
          parseCommandLine(argv);
          return true;
        } catch {
          return false;
        }
      });
      expect(parses, option).toBe(true);
    }
  });

  it("docs/cli.md has a section for every command, with each option its help names", () => {
    const reference = readFileSync(new URL("../../docs/cli.md", import.meta.url), "utf8");
    for (const [name, help] of allCommandHelp()) {
      const section = reference.split(new RegExp(`^### \`shipkey ${name}\`$`, "m"))[1];
      expect(section, name).toBeDefined();
      const own = (section ?? "").split(/^##/m)[0] ?? "";
      for (const [option] of help.options) expect(own, `${name} ${option}`).toContain(option);
    }
  });
});

describe("shipkey help (the CLI's runCli, as the binary runs it)", () => {
  it("shipkey --help prints the usage on stdout and exits 0", async () => {
    const result = await cli("--help");
    expect(result).toEqual({ code: 0, stdout: renderUsage(), stderr: "" });
  });

  it("shipkey alone prints the usage on stderr and exits 2", async () => {
    const result = await cli();
    expect(result).toEqual({ code: 2, stdout: "", stderr: renderUsage() });
  });

  it("shipkey --version prints package.json's version and exits 0", async () => {
    expect(await cli("--version")).toEqual({ code: 0, stdout: `${packageVersion}\n`, stderr: "" });
  });

  it.each([
    [["licenses", "list", "--help"]],
    [["licenses", "list", "-h"]],
    [["help", "licenses", "list"]],
    [["--help", "licenses", "list"]],
  ])("%j prints licenses list's own usage", async (args) => {
    const help = allCommandHelp().find(([name]) => name === "licenses list")?.[1];
    if (help === undefined) throw new Error("no licenses list command");
    expect(await cli(...args)).toEqual({
      code: 0,
      stdout: renderCommandHelp("licenses list", help),
      stderr: "",
    });
  });

  it("shipkey migrate --help and shipkey publish --help show their own usage", async () => {
    const migrate = await cli("migrate", "--help");
    expect(migrate.code).toBe(0);
    expect(migrate.stdout).toMatch(/^Usage: shipkey migrate\n/);
    const publish = await cli("publish", "--help");
    expect(publish.code).toBe(0);
    expect(publish.stdout).toMatch(/^Usage: shipkey publish --server <url>/);
    expect(publish.stdout).toContain("\n  --dry-run ");
  });

  it("shipkey licenses --help lists the group's commands; shipkey licenses alone is a usage error", async () => {
    const help = await cli("licenses", "--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toBe(renderUsage("licenses"));
    expect(help.stdout).toMatch(/^ {2}licenses list +List licenses/m);
    expect(help.stdout).not.toContain("products create");
    expect(await cli("licenses")).toEqual({
      code: 2,
      stdout: "",
      stderr:
        'shipkey: "licenses" needs a command: create, update, show, reset-machines, end-offline-place, move, delete, list\nRun `shipkey licenses --help` for usage.\n',
    });
  });

  it("help for an unknown command is a usage error", async () => {
    expect(await cli("help", "frobnicate")).toEqual({
      code: 2,
      stdout: "",
      stderr: 'shipkey: unknown command "frobnicate"\nRun `shipkey --help` for usage.\n',
    });
    expect((await cli("licenses", "frob", "--help")).stderr).toContain(
      'unknown command "licenses frob"',
    );
  });

  it.each([
    [["products", "create", "--bogus"], 'Unknown option "--bogus"', "products create"],
    [["licenses", "list", "-x"], 'Unknown option "-x"', "licenses list"],
    [["products", "create", "--slug"], "--slug needs a value", "products create"],
    [["licenses", "list", "--json=yes"], "--json takes no value", "licenses list"],
    [
      ["licenses", "list", "--product", "--expired", "yes"],
      '--product needs a value (for one that starts with "-", write --product=-value)',
      "licenses list",
    ],
  ])(
    "%j: %s, with balanced quotes, exit 2 and the command's --help",
    async (args, message, name) => {
      expect(await cli(...args)).toEqual({
        code: 2,
        stdout: "",
        stderr: `shipkey: ${message}\nRun \`shipkey ${name} --help\` for usage.\n`,
      });
    },
  );

  it("a usage mistake with --json is one JSON document on stderr with code USAGE", async () => {
    const result = await cli("products", "create", "--bogus", "--json");
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stderr)).toEqual({ error: 'Unknown option "--bogus"', code: "USAGE" });
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
