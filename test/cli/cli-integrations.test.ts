import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openIntegrationSecrets } from "../../src/domain/integrations/integrations.js";
import { runCli } from "../helpers/cli.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

describe("shipkey integrations", () => {
  let f: Fixture;
  const masterKey = randomBytes(32);
  const env = {
    SHIPKEY_MASTER_KEY: masterKey.toString("base64"),
    PUBLIC_URL: "https://licenses.example.com",
  };
  beforeAll(async () => {
    f = await createFixture("sqlite", { masterKey });
  });
  afterAll(async () => {
    await f.close();
  });
  const cli = (args: string[], input = "") => runCli(f.url, [...args, "--json"], { input, env });

  it("create reads the secret from stdin, prints the webhook URL; update rotates; prices map", async () => {
    const refused = await cli([
      "integrations",
      "create",
      "--product",
      f.product.slug,
      "--provider",
      "stripe",
    ]);
    expect(refused.code).toBe(2);
    const created = await cli(
      [
        "integrations",
        "create",
        "--product",
        f.product.slug,
        "--provider",
        "stripe",
        "--secret-stdin",
      ],
      "whsec_from_stdin\n",
    );
    expect(created.code, created.stderr).toBe(0);
    const integration = JSON.parse(created.stdout) as {
      id: string;
      webhookUrl: string;
      secrets: Array<{ id: string }>;
    };
    expect(integration.webhookUrl).toBe(
      `https://licenses.example.com/api/integrations/stripe/${integration.id}/webhook`,
    );
    expect(created.stdout).not.toContain("whsec_from_stdin");
    const rotated = await cli(
      ["integrations", "update", integration.id, "--secret-stdin"],
      "whsec_next\n",
    );
    expect(rotated.code, rotated.stderr).toBe(0);
    const removed = await cli([
      "integrations",
      "update",
      integration.id,
      "--remove-secret",
      integration.secrets[0]?.id ?? "",
    ]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(await openIntegrationSecrets(f.db, masterKey, integration.id)).toEqual(["whsec_next"]);

    const mapped = await cli([
      "integrations",
      "prices",
      integration.id,
      "--map",
      "price_1",
      "--plan",
      "pln_1",
    ]);
    expect(mapped.code, mapped.stderr).toBe(0);
    expect(JSON.parse(mapped.stdout)).toMatchObject([
      { priceId: "price_1", planId: "pln_1", quantityMeans: "seats" },
    ]);
    const events = await cli(["integrations", "events", integration.id]);
    expect(JSON.parse(events.stdout)).toEqual([]);
    const listed = await cli(["integrations", "list"]);
    expect(JSON.parse(listed.stdout)).toHaveLength(1);
    expect((await cli(["integrations", "remove", integration.id])).code).toBe(0);
  });
});
