import { readFileSync, writeFileSync } from "node:fs";
import { format } from "prettier";
import { describe, expect, it } from "vitest";
import { publishVocabularySource } from "../helpers/publish-vocabulary.js";

const file = new URL("../../packages/publish/src/targets.ts", import.meta.url);

describe("the publisher's platforms, arches, channels and rollout ranges come from the server's", () => {
  it("packages/publish/src/targets.ts is what the vocabulary generates (npm run contracts)", async () => {
    const expected = await format(publishVocabularySource(), {
      parser: "typescript",
      printWidth: 100,
    });
    if (process.env.UPDATE_SDK_CONTRACT === "1") writeFileSync(file, expected);
    expect(readFileSync(file, "utf8")).toBe(expected);
  });
});
