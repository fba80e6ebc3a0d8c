import { type Static, Type } from "typebox";
import { contract, DateTime, NullableInteger, NullableString, StringEnum } from "./kit.js";
import { ProductParams } from "./license-api.js";
import { RolloutView } from "./release-versions.js";
import { arches, channels, limits, platforms, rolloutRange, rolloutSteps } from "./vocabulary.js";

/** Publish (scope releases:write) and the update feeds, which anyone may read. */
export const PublishEntry = Type.Object({
  platform: StringEnum(platforms),
  arch: StringEnum(arches),
  downloadUrl: Type.String({ format: "uri", maxLength: limits.downloadUrl }),
  signature: Type.Optional(
    Type.String({
      maxLength: limits.signature,
      description:
        "While the product has a Tauri public key: the .sig file's contents (base64 minisign " +
        "signature) by that key, else 400 TAURI_SIGNATURE_INVALID",
    }),
  ),
  fileSize: Type.Optional(Type.Integer({ minimum: 0 })),
  sha512: Type.Optional(
    Type.String({
      description: "Base64 of the artifact's SHA-512 digest (electron-builder's form)",
    }),
  ),
});

export const PublishRequest = Type.Object({
  productSlug: Type.String(),
  version: Type.String({ description: "Semver 2.0.0; one leading v is stripped" }),
  channel: StringEnum(channels),
  releaseNotes: Type.Optional(
    Type.String({ description: "Markdown", maxLength: limits.releaseNotes }),
  ),
  releases: Type.Array(PublishEntry, { minItems: 1, maxItems: limits.releasesPerPublish }),
  rollout: Type.Optional(
    Type.Union(
      [
        Type.Object({
          percent: Type.Integer({
            minimum: rolloutRange.minPercent,
            maximum: rolloutRange.maxPercent,
          }),
        }),
        Type.Object({
          stepHours: Type.Integer({
            minimum: rolloutRange.minStepHours,
            maximum: rolloutRange.maxStepHours,
          }),
        }),
      ],
      {
        description:
          "Publish into a phased rollout, in the publish's transaction: `percent` of machines, or a " +
          `schedule of ${rolloutSteps} steps of \`stepHours\` each. Absent: a new version is ` +
          "released to every machine, a republished one keeps its rollout",
      },
    ),
  ),
  critical: Type.Optional(
    Type.Boolean({
      description:
        "Mark the version critical (offered to every machine whatever its rollout) or not; " +
        "absent: unchanged",
    }),
  ),
});

export const PublishAnswer = Type.Object(
  {
    product: Type.String(),
    version: Type.String(),
    channel: StringEnum(channels),
    releases: Type.Array(
      Type.Object({
        platform: StringEnum(platforms),
        arch: StringEnum(arches),
        status: StringEnum(["created", "updated"]),
      }),
    ),
    critical: Type.Optional(
      Type.Boolean({ description: "Only when the publish sent rollout or critical" }),
    ),
    rollout: Type.Optional(
      Type.Union([RolloutView, Type.Null()], {
        description:
          "Only when the publish sent rollout or critical; null: released to every machine",
      }),
    ),
    warnings: Type.Optional(
      Type.Array(Type.String(), {
        description:
          "Only when there is one: an entry an updater will not be offered (for example a Tauri " +
          "product's entry without a signature)",
      }),
    ),
  },
  { title: "PublishAnswer" },
);
export type PublishAnswer = Static<typeof PublishAnswer>;

export const publish = contract({
  method: "POST",
  url: "/api/releases/publish",
  operationId: "publishRelease",
  tag: "Releases",
  summary: "Publish release entries for a product version",
  description:
    "A key limited to products is refused with 403 PRODUCT_NOT_IN_KEY for any other product, " +
    "where the spec checks that the product exists (an unknown one stays 404). A field the " +
    "request or an entry does not define is refused with 400 UNKNOWN_FIELD, after the spec's " +
    "checks. Each publish is audited (release.publish) in its transaction.",
  auth: "releases:write",
  errors: [
    "INVALID_CHANNEL",
    "INVALID_RELEASE_ENTRY",
    "INVALID_PLATFORM_ARCH",
    "INVALID_DOWNLOAD_URL",
    "INVALID_VERSION",
    "PRODUCT_NOT_FOUND",
    "PRODUCT_NOT_IN_KEY",
    "UNKNOWN_FIELD",
    "TOO_MANY_RELEASES",
    "DUPLICATE_RELEASE_ENTRY",
    "TAURI_SIGNATURE_INVALID",
  ],
  schema: { body: PublishRequest, response: { 200: PublishAnswer } },
});

const feedQuery = {
  channel: Type.Optional(
    Type.String({
      description: "stable (default), beta or alpha, any case; beta also gets stable, alpha both",
    }),
  ),
  licenseKey: Type.Optional(
    Type.String({
      description:
        "When the product requires a license for updates and headers cannot be set: the " +
        "license key (else Authorization: License <key>)",
    }),
  ),
  machineId: Type.Optional(
    Type.String({
      description: "With licenseKey: the activated machine (else the Shipkey-Machine header)",
    }),
  ),
};
const currentVersionParam = Type.String({ description: "Semver; a leading v is accepted" });
const feedErrors = [
  "PRODUCT_NOT_FOUND",
  "INVALID_PLATFORM_ARCH",
  "INVALID_CHANNEL",
  "UPDATES_LICENSE_REQUIRED",
  "UPDATES_LICENSE_NOT_FOUND",
  "UPDATES_LICENSE_REFUSED",
] as const;
const NoContent = (description: string) => Type.Null({ description });
const caseNote = "Platform, arch and channel names are matched in any case.";

export const LatestAnswer = Type.Object(
  {
    version: Type.String(),
    channel: StringEnum(channels),
    notes: NullableString({ description: "Markdown, as published" }),
    pubDate: DateTime(),
    url: Type.String({ format: "uri" }),
    signature: NullableString(),
    sha512: NullableString(),
    fileSize: NullableInteger(),
    critical: Type.Boolean({
      description: "A critical update: install it without waiting (the app decides how)",
    }),
  },
  { title: "LatestAnswer" },
);
export type LatestAnswer = Static<typeof LatestAnswer>;

export const latest = contract({
  method: "GET",
  url: "/api/updates/:productSlug/latest",
  operationId: "getLatestRelease",
  tag: "Update feeds",
  summary: "The newest release (generic JSON)",
  description: `With currentVersion, 204 when nothing is newer; without it, 404 when the product has no release there at all. ${caseNote}`,
  auth: "public",
  errors: [...feedErrors, "MISSING_REQUIRED_FIELDS", "RELEASE_NOT_FOUND"],
  schema: {
    params: ProductParams,
    querystring: Type.Object({
      platform: Type.String({ description: "WINDOWS, MACOS or LINUX" }),
      arch: Type.String({ description: "X64 or ARM64" }),
      ...feedQuery,
      currentVersion: Type.Optional(
        Type.String({ description: "Semver; with it, 204 when nothing is newer" }),
      ),
    }),
    response: { 200: LatestAnswer, 204: NoContent("Nothing newer than currentVersion") },
  },
});

export const TauriAnswer = Type.Object(
  {
    version: Type.String(),
    notes: NullableString(),
    pub_date: DateTime(),
    url: Type.String({ format: "uri" }),
    signature: Type.String(),
    critical: Type.Boolean({
      description: "A critical update; the Tauri plugin hands it to the app in `rawJson`",
    }),
  },
  { title: "TauriAnswer" },
);

export const tauri = contract({
  method: "GET",
  url: "/api/updates/:productSlug/tauri/:target/:arch/:currentVersion",
  operationId: "getTauriUpdate",
  tag: "Update feeds",
  summary: "Tauri v2 updater (dynamic server)",
  description:
    "plugins.updater.endpoints: https://<server>/api/updates/<product>/tauri/{{target}}/{{arch}}/{{current_version}}. " +
    caseNote,
  auth: "public",
  errors: feedErrors,
  schema: {
    params: Type.Object({
      ...ProductParams.properties,
      target: Type.String({ description: "linux, windows or darwin" }),
      arch: Type.String({ description: "x86_64, aarch64 (i686 and armv7: always 204)" }),
      currentVersion: currentVersionParam,
    }),
    querystring: Type.Object({
      ...feedQuery,
      bundle: Type.Optional(Type.String({ description: "Accepted, unused" })),
    }),
    response: { 200: TauriAnswer, 204: NoContent("No newer release") },
  },
});

export const SquirrelMacAnswer = Type.Object(
  {
    url: Type.String({ format: "uri" }),
    name: Type.String(),
    notes: NullableString(),
    pub_date: DateTime(),
  },
  { title: "SquirrelMacAnswer" },
);

export const squirrelMac = contract({
  method: "GET",
  url: "/api/updates/:productSlug/squirrel-mac/:arch/:currentVersion",
  operationId: "getSquirrelMacUpdate",
  tag: "Update feeds",
  summary: "Electron autoUpdater on macOS (Squirrel.Mac)",
  description:
    "autoUpdater.setFeedURL({url: 'https://<server>/api/updates/<product>/squirrel-mac/<arch>/<version>'}). " +
    caseNote,
  auth: "public",
  errors: feedErrors,
  schema: {
    params: Type.Object({
      ...ProductParams.properties,
      arch: Type.String({ description: "x64 or arm64" }),
      currentVersion: currentVersionParam,
    }),
    querystring: Type.Object(feedQuery),
    response: { 200: SquirrelMacAnswer, 204: NoContent("No newer release") },
  },
});

export const electron = contract({
  method: "GET",
  url: "/api/updates/:productSlug/electron/:file",
  operationId: "getElectronUpdateInfo",
  tag: "Update feeds",
  summary: "electron-updater (electron-builder's generic provider)",
  description:
    "electron-builder: publish: {provider: generic, url: 'https://<server>/api/updates/<product>/electron'}",
  auth: "public",
  errors: feedErrors,
  schema: {
    params: Type.Object({
      ...ProductParams.properties,
      file: Type.String({
        description:
          "{latest|beta|alpha}.yml (Windows), …-mac.yml, …-linux.yml (x64), …-linux-arm64.yml",
      }),
    }),
    querystring: Type.Object({ licenseKey: feedQuery.licenseKey, machineId: feedQuery.machineId }),
    response: {
      200: Type.String({
        description: "UpdateInfo as YAML (application/yaml); weak ETag, If-None-Match gives 304",
      }),
    },
  },
});

export const sparkle = contract({
  method: "GET",
  url: "/api/updates/:productSlug/sparkle/:platform/:arch/appcast.xml",
  operationId: "getSparkleAppcast",
  tag: "Update feeds",
  summary: "Sparkle 2 / WinSparkle appcast",
  description:
    "SUFeedURL: https://<server>/api/updates/<product>/sparkle/macos/<arch>/appcast.xml. " +
    caseNote,
  auth: "public",
  errors: feedErrors,
  schema: {
    params: Type.Object({
      ...ProductParams.properties,
      platform: Type.String({ description: "macos or windows" }),
      arch: Type.String({ description: "x64 or arm64" }),
    }),
    querystring: Type.Object(feedQuery),
    response: {
      200: Type.String({
        description: "RSS 2.0 appcast (application/xml); weak ETag, If-None-Match gives 304",
      }),
    },
  },
});

const downloadParams = {
  ...ProductParams.properties,
  version: Type.String({ description: "The version, as published" }),
  platform: Type.String({ description: "WINDOWS, MACOS or LINUX, any case" }),
  arch: Type.String({ description: "X64 or ARM64, any case" }),
};
const downloadDescription =
  "302 to the stored download URL of a version's build; counted per version, platform and day. " +
  "Yanked versions are 404.";

export const download = contract({
  method: "GET",
  url: "/api/downloads/:productSlug/:version/:platform/:arch",
  operationId: "downloadBuild",
  tag: "Update feeds",
  summary: "Download a build (counted redirect)",
  description: downloadDescription,
  auth: "public",
  errors: [...feedErrors, "RELEASE_NOT_FOUND"],
  schema: {
    params: Type.Object(downloadParams),
    querystring: Type.Object({ licenseKey: feedQuery.licenseKey, machineId: feedQuery.machineId }),
    response: { 302: NoContent("Location: the stored download URL") },
  },
});

export const downloadNamed = contract({
  ...download,
  url: "/api/downloads/:productSlug/:version/:platform/:arch/:file",
  operationId: "downloadBuildNamed",
  summary: "Download a build (counted redirect, named)",
  description: `${downloadDescription} The last segment (the stored file name, which updaters name the downloaded file after) is ignored, except that a name ending in .blockmap redirects, uncounted, to the stored URL's path + .blockmap (electron-updater's differential download).`,
  schema: {
    ...download.schema,
    params: Type.Object({ ...downloadParams, file: Type.String() }),
  },
});
