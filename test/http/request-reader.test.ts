import { describe, expect, it } from "vitest";
import type { TSchema } from "typebox";
import * as licenseApi from "../../src/contracts/license-api.js";
import { latest, PublishEntry, PublishRequest } from "../../src/contracts/releases.js";
import { ShipkeyError } from "../../src/errors.js";
import {
  checkValue,
  contractValidator,
  readBody,
  readFields,
  requirePresent,
} from "../../src/http/request-reader.js";

/**
 * The request reader's rules, read from the contracts' schemas (docs/reference/license-endpoints.md,
 * "Input rules"): each refusal as the error body carries it, or what the handler is given.
 */
function refusal(read: () => unknown): object {
  try {
    read();
  } catch (err) {
    if (err instanceof ShipkeyError) return { code: err.code, error: err.message, ...err.details };
    throw err;
  }
  throw new Error("not refused");
}

const activate = (body: unknown) => readBody(licenseApi.ActivateRequest, body);
const license = { licenseKey: "K", machineId: "m", productSlug: "app" };

describe("the request reader: bodies", () => {
  it("a body that is not an object is BODY_NOT_OBJECT", () => {
    for (const body of [null, [], "x", 5]) {
      expect(refusal(() => activate(body))).toMatchObject({ code: "BODY_NOT_OBJECT" });
    }
  });

  it("absent, null and empty are missing: every missing required field, in schema order", () => {
    expect(refusal(() => activate({}))).toEqual({
      code: "MISSING_REQUIRED_FIELDS",
      error: "Missing required fields",
      fields: ["licenseKey", "machineId", "productSlug"],
    });
    // Before any type: a field of the wrong type does not hide the missing ones.
    expect(refusal(() => activate({ licenseKey: 5, machineId: null, productSlug: "" }))).toEqual({
      code: "MISSING_REQUIRED_FIELDS",
      error: "Missing required fields",
      fields: ["machineId", "productSlug"],
    });
  });

  it("then each field in schema order: its JSON type, then NUL", () => {
    expect(refusal(() => activate({ ...license, licenseKey: 5, machineId: 6 }))).toEqual({
      code: "INVALID_FIELD_TYPE",
      error: "licenseKey must be a string",
      field: "licenseKey",
    });
    expect(refusal(() => activate({ ...license, licenseKey: "a\u0000", machineId: 6 }))).toEqual({
      code: "INVALID_FIELD_VALUE",
      error: "licenseKey must not contain NUL characters",
      field: "licenseKey",
    });
    expect(refusal(() => activate({ ...license, machineName: ["Laptop"] }))).toEqual({
      code: "INVALID_FIELD_TYPE",
      error: "machineName must be a string",
      field: "machineName",
    });
  });

  it("gives the handler the fields it defines: missing optional ones and unknown ones left out", () => {
    expect(activate({ ...license, machineName: "", platform: null, newerField: 1 })).toEqual(
      license,
    );
  });

  it("never refuses a lenient field (appVersion): a value the schema does not take is absent", () => {
    for (const appVersion of [5, "1".repeat(129), "a\u0000", ["1.0.0"]]) {
      expect(activate({ ...license, appVersion })).toEqual(license);
    }
    expect(activate({ ...license, appVersion: "v1.2.3" })).toEqual({
      ...license,
      appVersion: "v1.2.3",
    });
  });

  it("a whole number: its JSON type, then its range in words, with its unit", () => {
    const checkout = (ttlSeconds: unknown) =>
      readBody(licenseApi.CheckoutRequest, { ...license, ttlSeconds });
    expect(refusal(() => checkout("60"))).toEqual({
      code: "INVALID_FIELD_TYPE",
      error: "ttlSeconds must be a number",
      field: "ttlSeconds",
    });
    for (const ttlSeconds of [0, 1.5, 2 ** 53]) {
      expect(refusal(() => checkout(ttlSeconds))).toEqual({
        code: "INVALID_FIELD_VALUE",
        error: "ttlSeconds must be a whole number of seconds, at least 1",
        field: "ttlSeconds",
      });
    }
    expect(checkout(60)).toEqual({ ...license, ttlSeconds: 60 });
  });

  it("a union of one-field objects (rollout): exactly one member, its value in its range", () => {
    const rollout = (value: unknown) => readFields(PublishRequest, { rollout: value }, ["rollout"]);
    expect(refusal(() => rollout(50))).toEqual({
      code: "INVALID_FIELD_TYPE",
      error: "rollout must be an object",
      field: "rollout",
    });
    for (const value of [{}, { percent: 5, stepHours: 2 }, { steps: 1 }]) {
      expect(refusal(() => rollout(value))).toEqual({
        code: "INVALID_FIELD_VALUE",
        error: "rollout must have exactly one of percent or stepHours",
        field: "rollout",
      });
    }
    expect(refusal(() => rollout({ percent: "5" }))).toEqual({
      code: "INVALID_FIELD_VALUE",
      error: "rollout.percent must be a whole number from 1 to 100",
      field: "rollout.percent",
    });
    expect(refusal(() => rollout({ stepHours: 721 }))).toMatchObject({
      error: "rollout.stepHours must be a whole number from 1 to 720",
    });
    expect(rollout({ stepHours: 24 })).toEqual({ rollout: { stepHours: 24 } });
  });

  it("the spec's own refusals: an enum's (whatever the type) and an array item's", () => {
    const platform = PublishEntry.properties.platform as TSchema;
    expect(refusal(() => checkValue(platform, 5, "releases[1].platform"))).toEqual({
      code: "INVALID_PLATFORM_ARCH",
      error: "Invalid platform/arch",
      field: "releases[1].platform",
    });
    expect(
      refusal(() => requirePresent(PublishEntry, { platform: "MACOS" }, "releases[0]")),
    ).toEqual({
      code: "INVALID_RELEASE_ENTRY",
      error: "Invalid release entry",
      field: "releases[0].arch",
    });
  });
});

describe("the request reader: query strings", () => {
  const read = contractValidator(latest)({
    schema: latest.schema.querystring,
    method: "GET",
    url: latest.url,
    httpPart: "querystring",
  }) as (query: unknown) => { value?: unknown; error?: ShipkeyError };
  const body = (query: object) => {
    const { value, error } = read(query);
    return error === undefined ? { value } : { code: error.code, ...error.details };
  };

  it("the required parameters first, each given once, then the missing ones", () => {
    expect(body({ platform: ["WINDOWS", "LINUX"] })).toEqual({
      code: "INVALID_FIELD_VALUE",
      field: "platform",
    });
    expect(body({ arch: "X64", channel: ["beta", "alpha"] })).toEqual({
      code: "MISSING_REQUIRED_FIELDS",
      fields: ["platform"],
    });
  });

  it("then the others, in schema order: channel in any case, as its own spelling", () => {
    const required = { platform: "WINDOWS", arch: "X64" };
    expect(body({ ...required, channel: "Beta", currentVersion: "" })).toEqual({
      value: { ...required, channel: "BETA" },
    });
    expect(body({ ...required, channel: "nope", currentVersion: ["1", "2"] })).toEqual({
      code: "INVALID_CHANNEL",
      field: "channel",
    });
  });

  it("leaves the credentials to the feeds' access check, as sent", () => {
    const query = { platform: "WINDOWS", arch: "X64", licenseKey: ["a", "b"], foo: "1" };
    expect(body(query)).toEqual({
      value: { platform: "WINDOWS", arch: "X64", licenseKey: ["a", "b"] },
    });
  });
});
