import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The documentation's own rules: a short front page, lines a reader can take in at once, and
 * links that lead somewhere. Fenced blocks without a language, or marked `text`/`console`, hold
 * command output (the CLI's `--help`, say) and keep its lines as printed; tables keep their rows.
 */
const root = resolve(import.meta.dirname, "..");

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith(".md") ? [path] : [];
  });
}

const files = [join(root, "README.md"), ...markdownFiles(join(root, "docs"))];

interface Line {
  text: string;
  number: number;
  /** In a fenced block; `output` when that block holds command output. */
  fence: "none" | "code" | "output";
}

function linesOf(path: string): Line[] {
  let fence: Line["fence"] = "none";
  let marker = "";
  return readFileSync(path, "utf8")
    .split("\n")
    .map((text, index) => {
      const opening = /^\s*(`{3,}|~{3,})\s*([\w-]*)/.exec(text);
      if (fence === "none" && opening) {
        marker = opening[1] ?? "```";
        const info = opening[2] ?? "";
        fence = info === "" || info === "text" || info === "console" ? "output" : "code";
        return { text, number: index + 1, fence };
      }
      const line: Line = { text, number: index + 1, fence };
      if (fence !== "none" && text.trim().startsWith(marker) && text.trim() === marker.trim()) {
        fence = "none";
      }
      return line;
    });
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of linesOf(path)) {
    const heading = line.fence === "none" ? /^#{1,6}\s+(.*)$/.exec(line.text) : null;
    if (!heading) continue;
    const base = (heading[1] ?? "")
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

function name(path: string): string {
  return relative(root, path);
}

describe("documentation", () => {
  it("README.md has at most 150 lines", () => {
    const lines = readFileSync(join(root, "README.md"), "utf8").trimEnd().split("\n");
    expect(lines.length).toBeLessThanOrEqual(150);
  });

  it("no line is over 120 characters outside tables and command output", () => {
    const long = files.flatMap((path) =>
      linesOf(path)
        .filter((line) => line.fence !== "output" && !line.text.trimStart().startsWith("|"))
        .filter((line) => [...line.text].length > 120)
        .map((line) => `${name(path)}:${line.number} (${[...line.text].length})`),
    );
    expect(long).toEqual([]);
  });

  it("every relative link points to an existing file and heading", () => {
    const broken: string[] = [];
    for (const path of files) {
      for (const line of linesOf(path)) {
        if (line.fence !== "none") continue;
        const text = line.text.replace(/`[^`]*`/g, "");
        for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
          const target = match[1] ?? "";
          if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
          const [file = "", anchor] = target.split("#");
          const resolved = file === "" ? path : resolve(dirname(path), file);
          const where = `${name(path)}:${line.number} -> ${target}`;
          if (!existsSync(resolved)) {
            broken.push(`${where} (no such file)`);
          } else if (anchor && resolved.endsWith(".md") && !anchorsOf(resolved).has(anchor)) {
            broken.push(`${where} (no such heading)`);
          }
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("finds the links and long lines it is meant to find", () => {
    // The rules above would pass on nothing at all; make sure they read what they should.
    expect(files.map(name)).toContain("docs/reference/errors.md");
    expect(anchorsOf(join(root, "docs/operations.md"))).toContain("the-master-key");
    expect(linesOf(join(root, "README.md")).some((line) => line.fence === "code")).toBe(true);
  });
});
