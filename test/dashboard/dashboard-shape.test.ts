import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * The dashboard's pages are parse → domain → a view of their data, in functions a
 * reader takes in at a glance. Any function in src/http/dashboard/** longer than this fails.
 */
const maxLines = 80;
const root = join(import.meta.dirname, "..", "..", "src", "http", "dashboard");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

interface Measured {
  where: string;
  lines: number;
}

function functionsIn(path: string): Measured[] {
  const file = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
  const found: Measured[] = [];
  const line = (position: number) => file.getLineAndCharacterOfPosition(position).line;
  const visit = (node: ts.Node) => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node) ||
      ts.isMethodDeclaration(node)
    ) {
      const start = line(node.getStart(file));
      found.push({
        where: `${relative(root, path)}:${start + 1} ${nameOf(node)}`,
        lines: line(node.getEnd()) - start + 1,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
    return parent.name.getText();
  }
  return "(anonymous)";
}

describe("dashboard code shape", () => {
  const files = sourceFiles(root);
  const functions = files.flatMap(functionsIn);

  it("finds the dashboard's functions", () => {
    expect(files.length).toBeGreaterThan(10);
    expect(functions.length).toBeGreaterThan(100);
  });

  it("keeps routes and parsing in pages/, markup in views/", () => {
    const imports = (path: string) =>
      [...readFileSync(path, "utf8").matchAll(/from "([^"]+)"/g)].map((m) => m[1] ?? "");
    const inside = (dir: string) => files.filter((path) => path.startsWith(join(root, dir)));
    // A view is a function of data: it knows no request, database or action.
    for (const view of inside("views")) {
      expect(
        imports(view).filter((i) => /fastify|kysely|actions\/|db\//.test(i)),
        view,
      ).toEqual([]);
    }
    // A page builds no markup of its own: its view does.
    for (const page of inside("pages")) {
      expect(
        imports(page).filter((i) => i.endsWith("/html.js")),
        page,
      ).toEqual([]);
    }
  });

  it(`has no function over ${maxLines} lines`, () => {
    const long = functions
      .filter((f) => f.lines > maxLines)
      .map((f) => `${f.where} (${f.lines} lines)`);
    expect(long).toEqual([]);
  });
});
