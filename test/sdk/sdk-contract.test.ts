import { readFileSync, writeFileSync } from "node:fs";
import { format } from "prettier";
import { describe, expect, it } from "vitest";
import { sdkContractSource } from "../helpers/sdk-contract.js";

const file = new URL("../../packages/client/src/contract.ts", import.meta.url);

describe("the SDK's types come from the server's contracts", () => {
  it("packages/client/src/contract.ts is what the contracts generate (npm run contracts)", async () => {
    const expected = await format(sdkContractSource(), { parser: "typescript", printWidth: 100 });
    if (process.env.UPDATE_SDK_CONTRACT === "1") writeFileSync(file, expected);
    expect(readFileSync(file, "utf8")).toBe(expected);
  });
});
