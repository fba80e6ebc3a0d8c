/** Prints rows as a table: the first column left-aligned, the others right-aligned. */
export function printTable(rows: string[][]): void {
  const widths =
    rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length))) ?? [];
  for (const row of rows) {
    process.stdout.write(
      `${row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join("  ")}\n`,
    );
  }
}
