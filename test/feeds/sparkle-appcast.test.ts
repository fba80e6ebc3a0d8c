import semver from "semver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProduct, type Product } from "../../src/domain/products/products.js";
import { publishRelease } from "../../src/actions/releases.js";
import { testActor } from "../helpers/actions.js";
import { sparkleVersion } from "../../src/domain/releases/version.js";
import { type Channel } from "../../src/contracts/vocabulary.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import {
  compareSparkleVersions,
  type SparkleHost,
  sparkleChooses,
  sparkleItems,
} from "../helpers/sparkle.js";

describe("the Sparkle comparator port", () => {
  // Cases from Sparkle's own Tests/SUVersionComparisonTest.m.
  it.each([
    ["1.0", "1.1", -1],
    ["1.0", "1.0", 0],
    ["2.0", "1.1", 1],
    ["0.1", "0.0.1", 1],
    ["1.0", "1.0.0", 0],
    ["1.5.5-335d3e2", "1.5.6-b252311", -1],
    ["1.5.5-335d3e2", "1.5.5-a655360", 0],
    ["1.1.0b1", "1.1.0b2", -1],
    ["1.0a1", "1.0b1", -1],
    ["1.0b1", "1.0", -1],
    ["1.0b9", "1.0b10", -1],
    ["1.0rc", "1.0", -1],
    ["1.0pre1", "1.0.0pre1", 0],
    ["1.0b1 (1234)", "1.0 (1234)", -1],
    ["3.3 (5847)", "3.3.1b1 (5902)", -1],
    ["1.1.1.1818", "1.1.1.1818.0", 0],
    ["201210251627", "201211051041", -1],
  ])("%s against %s is %i", (a, b, order) => {
    expect(compareSparkleVersions(a, b)).toBe(order);
  });

  it("compares the published versions themselves as equal: the defect sparkleVersion fixes", () => {
    expect(compareSparkleVersions("1.2.0-beta.1", "1.2.0")).toBe(0);
    expect(compareSparkleVersions("1.2.0-beta.1", "1.2.0-beta.2")).toBe(0);
  });
});

describe("sparkleVersion", () => {
  const ordered = [
    "0.9.0",
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1-beta.1",
    "1.0.1",
    "1.2.0-beta.1",
    "1.2.0-beta.2",
    "1.2.0",
    "1.2.1",
    "1.10.0",
    "2.0.0-rc.1",
    "2.0.0",
  ];

  it("orders versions under Sparkle's comparator as semver precedence does", () => {
    for (const a of ordered) {
      for (const b of ordered) {
        const expected = Math.sign(semver.compare(a, b));
        expect([a, b, compareSparkleVersions(sparkleVersion(a), sparkleVersion(b))]).toEqual([
          a,
          b,
          expected,
        ]);
      }
    }
  });

  it("differs where semver puts a number before a word at the same place (documented)", () => {
    expect(semver.compare("1.0.0-alpha.1", "1.0.0-alpha.beta")).toBe(-1);
    const [a, b] = [sparkleVersion("1.0.0-alpha.1"), sparkleVersion("1.0.0-alpha.beta")];
    expect(compareSparkleVersions(a, b)).toBe(1);
  });

  it("drops the hyphen of the prerelease and the build metadata", () => {
    expect(sparkleVersion("1.2.0-beta.1")).toBe("1.2.0beta.1");
    expect(sparkleVersion("1.2.0-rc-2.1+build.7")).toBe("1.2.0rc2.1");
    expect(sparkleVersion("1.2.0+build.7")).toBe("1.2.0");
  });
});

describe.each(dialects)("the Sparkle appcast, read as Sparkle reads it (%s)", (dialect) => {
  let f: Fixture;
  let product: Product;

  beforeAll(async () => {
    f = await createFixture(dialect);
    product = await createProduct(f.db, { slug: "sparkle-app", name: "Sparkle App" });
  });
  afterAll(async () => {
    await f?.close();
  });

  const publish = (version: string, channel: Channel, notes: string | null = null) =>
    publishRelease(f.db, testActor, product, {
      version,
      channel,
      releaseNotes: notes,
      entries: [
        {
          platform: "MACOS",
          arch: "ARM64",
          downloadUrl: `https://cdn.example.com/app-${version}.zip`,
          signature: null,
          fileSize: 10,
        },
      ],
    });

  const appcast = async (channel: string) => {
    const response = await f.app.inject({
      url: `/api/updates/sparkle-app/sparkle/macos/arm64/appcast.xml?channel=${channel}`,
    });
    expect(response.statusCode).toBe(200);
    return response.body;
  };

  const host = (cfBundleVersion: string, allowedChannels: string[] = []): SparkleHost => ({
    version: cfBundleVersion,
    allowedChannels,
    phasedGroup: null,
    now: new Date(),
  });
  const offered = async (client: SparkleHost, channel: string) =>
    sparkleChooses(sparkleItems(await appcast(channel)), client)?.raw[
      "sparkle:shortVersionString"
    ] ?? null;

  it("moves a beta client from beta to beta, then to the release and its patch; a stable client sees no beta", async () => {
    await publish("1.1.0", "STABLE");
    await publish("1.2.0-beta.1", "BETA");
    await publish("1.2.0-beta.2", "BETA");
    const onBeta1 = host(sparkleVersion("1.2.0-beta.1"), ["beta"]);
    const stable = host(sparkleVersion("1.1.0"));
    expect(await offered(onBeta1, "beta")).toBe("1.2.0-beta.2");
    expect(await offered(stable, "beta")).toBeNull();
    expect(await offered(stable, "stable")).toBeNull();

    await publish("1.2.0", "STABLE");
    expect(await offered(host(sparkleVersion("1.2.0-beta.2"), ["beta"]), "beta")).toBe("1.2.0");
    expect(await offered(onBeta1, "beta")).toBe("1.2.0");
    expect(await offered(stable, "stable")).toBe("1.2.0");

    await publish("1.2.1", "STABLE");
    expect(await offered(host(sparkleVersion("1.2.0"), ["beta"]), "beta")).toBe("1.2.1");
    expect(await offered(host(sparkleVersion("1.2.1"), ["beta"]), "beta")).toBeNull();
  });

  it("dates items in Sparkle's own pattern", async () => {
    const items = sparkleItems(await appcast("stable"));
    expect(items.length).toBeGreaterThan(0);
    for (const item of items) {
      expect(item.date).toBeInstanceOf(Date);
      expect(item.raw.pubDate).toMatch(/ \+0000$/);
    }
  });

  it("renders Markdown notes as HTML, and hostile markup in them as text", async () => {
    const hostile =
      '## Fixed\n- <script>alert(1)</script>\n- <img src=x onerror="alert(2)">\n' +
      "- [click](javascript:alert(3)) and ]]> & <![CDATA[x]]>";
    await publish("1.3.0", "STABLE", hostile);
    const [item] = sparkleItems(await appcast("stable"));
    const description = item?.raw.description as Record<string, string>;
    expect(description["@sparkle:format"]).toBe("html");
    const htmlText = description["#text"] ?? "";
    expect(htmlText).toContain("<h2>Fixed</h2>");
    expect(htmlText).toContain("<li>&lt;script&gt;alert(1)&lt;/script&gt;</li>");
    expect(htmlText).not.toMatch(/<script|<img|href="javascript/i);
  });
});
