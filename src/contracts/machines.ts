import { type Static, Type } from "typebox";
import {
  contract,
  DateTime,
  licenseErrors,
  LicenseKeyParams,
  NullableDateTime,
  NullableString,
  Page,
  PageQuery,
  strict,
} from "./kit.js";
import { limits } from "./vocabulary.js";

// A license's machines on the admin API: active ones, past activations and offline places.

export const Machine = Type.Object(
  {
    machineId: Type.String(),
    machineName: NullableString(),
    platform: NullableString(),
    activatedAt: DateTime(),
    lastSeenAt: DateTime(),
    appVersion: NullableString({
      description: "The app's version the machine last reported (SDK appVersion); null: none",
    }),
  },
  { title: "Machine" },
);
export type Machine = Static<typeof Machine>;

export const PastActivation = Type.Object(
  {
    ...Machine.properties,
    deactivatedAt: DateTime(),
    deactivatedBy: Type.Unsafe<"client" | "admin" | "lease" | null>({
      type: ["string", "null"],
      enum: ["client", "admin", "lease", null],
      description:
        "Who ended it: the app, an admin, or the server when the machine's lease lapsed; null " +
        "for one ended before this was recorded",
    }),
  },
  { title: "PastActivation" },
);
export type PastActivation = Static<typeof PastActivation>;

export const ActiveMachine = Type.Object(
  {
    ...Machine.properties,
    certificateExpiresAt: NullableDateTime(
      "When the machine's latest offline certificate expires; null: it holds none",
    ),
    leaseExpiresAt: NullableDateTime(
      "When the server frees the machine's slot unless it is seen again (the product's " +
        "machineLeaseDays); null: the product sets no lease",
    ),
  },
  { title: "ActiveMachine" },
);
export type ActiveMachine = Static<typeof ActiveMachine>;

export const OfflinePlace = Type.Object(
  {
    machineId: Type.String(),
    machineName: NullableString({ description: "As its last activation reported it" }),
    platform: NullableString({ description: "As its last activation reported it" }),
    deactivatedAt: NullableDateTime("When its last activation ended"),
    certificateIssuedAt: DateTime(),
    endsAt: DateTime("When its certificate expires, and with it the place; until then it counts"),
  },
  {
    title: "OfflinePlace",
    description:
      "A machine no longer active on the license that holds an unexpired certificate: it can " +
      "run offline until endsAt, so it keeps a place. Active machines plus offline places never " +
      "exceed maxMachines + the product's offlineAllowance",
  },
);
export type OfflinePlace = Static<typeof OfflinePlace>;

export const listMachines = contract({
  method: "GET",
  url: "/api/admin/licenses/:licenseKey/machines",
  operationId: "listMachines",
  tag: "Admin: licenses",
  summary: "A license's active machines, a page at a time, and its past activations",
  description:
    "Active machines in activation order (oldest first), cursor-paginated; `total` counts them " +
    "all. `past`: the ended activations, newest first (at most 100), on every page.",
  auth: "licenses:read",
  errors: licenseErrors,
  schema: {
    params: LicenseKeyParams,
    querystring: Type.Object(
      {
        limit: Type.Optional(
          Type.String({ pattern: "^[1-9][0-9]{0,2}$", description: "1 to 200, default 200" }),
        ),
        cursor: PageQuery.cursor,
      },
      strict,
    ),
    response: {
      200: Type.Object({
        ...Page(ActiveMachine).properties,
        total: Type.Integer({ description: "Every active machine of the license" }),
        past: Type.Array(PastActivation),
      }),
    },
  },
});

export const deactivateMachine = contract({
  method: "DELETE",
  url: "/api/admin/licenses/:licenseKey/machines/:machineId",
  operationId: "deactivateMachineByAdmin",
  tag: "Admin: licenses",
  summary: "Deactivate a machine (never limited by the churn limit)",
  auth: "licenses:write",
  errors: [...licenseErrors, "ACTIVATION_NOT_FOUND"],
  schema: {
    params: Type.Object({
      licenseKey: LicenseKeyParams.properties.licenseKey,
      machineId: Type.String({ minLength: 1, maxLength: limits.identifier }),
    }),
    response: {
      200: Type.Object({
        deactivated: Type.Literal(true),
        licenseKey: Type.String(),
        machineId: Type.String(),
      }),
    },
  },
});

export const endOfflinePlace = contract({
  method: "DELETE",
  url: "/api/admin/licenses/:licenseKey/offline-places/:machineId",
  operationId: "endOfflinePlace",
  tag: "Admin: licenses",
  summary: "End a deactivated machine's offline place before its certificate expires",
  description:
    "For a machine that will not come back (a stolen laptop): its certificate still works " +
    "offline until it expires, but no longer counts against the license's machines. 404 " +
    "OFFLINE_PLACE_NOT_FOUND when the machine holds none.",
  auth: "licenses:write",
  errors: [...licenseErrors, "OFFLINE_PLACE_NOT_FOUND"],
  schema: {
    params: deactivateMachine.schema.params,
    response: {
      200: Type.Object({
        ended: Type.Literal(true),
        licenseKey: Type.String(),
        machineId: Type.String(),
        endsAt: DateTime("When the certificate itself expires"),
      }),
    },
  },
});
