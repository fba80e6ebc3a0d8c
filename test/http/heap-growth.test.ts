import { describe, expect, it } from "vitest";
import { heapGrowthFlag } from "../../src/lib/heap-growth.js";

// What the flag does to the server's RSS is a measurement (npm run bench, peak RSS),
// host-dependent like a timing, so not asserted here.
describe("the server's bound on V8 heap growth (src/lib/heap-growth.ts)", () => {
  it("sets --heap-growing-percent=50 unless the operator gave one on the command line", () => {
    expect(heapGrowthFlag([])).toBe("--heap-growing-percent=50");
    expect(heapGrowthFlag(["--heap-growing-percent=200"])).toBeNull();
    expect(heapGrowthFlag(["--heap_growing_percent=200"])).toBeNull();
    expect(heapGrowthFlag(["--max-old-space-size=512"])).toBe("--heap-growing-percent=50");
  });
});
