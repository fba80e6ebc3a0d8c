import { allCommandHelp, type CommandHelp } from "./commands.js";

/** Help lines are wrapped to this width, so `shipkey --help` fits a terminal and the README. */
const width = 100;

const footer = `Every command takes --json (exactly one JSON document on stdout) and --help (its own usage).
The database is DATABASE_URL (default sqlite:./data/shipkey.db); it is created and migrated
if needed. Exit status: 0 done, 1 refused or failed, 2 a usage mistake.
`;

/** `shipkey --help`: every command with one line; `group` narrows it to one group's commands. */
export function renderUsage(group?: string): string {
  const entries = allCommandHelp().filter(
    ([name]) => group === undefined || name.startsWith(`${group} `),
  );
  const nameWidth = Math.max(...entries.map(([name]) => name.length));
  const lines = entries.map(([name, help]) => `  ${name.padEnd(nameWidth)}  ${help.summary}`);
  const head =
    group === undefined
      ? "Usage: shipkey <command> [options] [--json]\n       shipkey --version"
      : `Usage: shipkey ${group} <command> [options] [--json]`;
  return `${head}

Commands:
${lines.join("\n")}

Run \`shipkey <command> --help\` for a command's options and an example.
${footer}`;
}

/** `shipkey <command> --help`: synopsis, what it does, each option in one line, an example. */
export function renderCommandHelp(name: string, help: CommandHelp): string {
  const options: Array<readonly [string, string]> = [
    ...help.options,
    ["--json", "print exactly one JSON document on stdout"],
    ["-h, --help", "print this help"],
  ];
  // A longer option has its description on the next line, so descriptions line up.
  const optionWidth = Math.min(Math.max(...options.map(([option]) => option.length)), 28);
  const optionLines = options.map(([option, text]) =>
    option.length > optionWidth
      ? `  ${option}\n  ${"".padEnd(optionWidth)}  ${text}`
      : `  ${option.padEnd(optionWidth)}  ${text}`,
  );
  return `${wrapSynopsis(`Usage: shipkey ${name}`, help.synopsis)}

${help.summary}.

Options:
${optionLines.join("\n")}

Example:
  ${help.example}
`;
}

/** `head` then the synopsis' words (a bracketed group is one word), wrapped at `width`. */
function wrapSynopsis(head: string, synopsis: string): string {
  const words = synopsis.match(/\[[^[\]]*\]|\S+/g) ?? [];
  const lines = [head];
  for (const word of words) {
    const last = lines[lines.length - 1] ?? "";
    if (last.length + 1 + word.length > width && last.trim() !== "") lines.push(`    ${word}`);
    else lines[lines.length - 1] = `${last} ${word}`;
  }
  return lines.join("\n");
}
