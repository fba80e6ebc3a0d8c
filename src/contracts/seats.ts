import { Type } from "typebox";
import { contract, licenseErrors, LicenseKeyParams } from "./kit.js";
import { License } from "./licenses.js";
import { limits } from "./vocabulary.js";

// A license's seats as support handles them: reset its machines, move it, delete it. (Ending an
// offline place is in machines.ts, beside the machines.)

export const resetMachines = contract({
  method: "POST",
  url: "/api/admin/licenses/:licenseKey/reset-machines",
  operationId: "resetMachines",
  tag: "Admin: licenses",
  summary: "Deactivate every machine of a license in one action",
  description:
    "Each machine is deactivated by an admin (the churn limit neither holds nor counts it). " +
    "Certificates are left alone: a machine holding an unexpired one keeps an offline place " +
    "until its exp.",
  auth: "licenses:write",
  errors: licenseErrors,
  schema: {
    params: LicenseKeyParams,
    response: {
      200: Type.Object({
        licenseKey: Type.String(),
        machineIds: Type.Array(Type.String(), { description: "The machines deactivated" }),
        certificatesHeld: Type.Integer({
          description:
            "Machines holding an unexpired certificate: each keeps an offline place until its exp",
        }),
      }),
    },
  },
});

export const moveLicense = contract({
  method: "POST",
  url: "/api/admin/licenses/:licenseKey/move",
  operationId: "moveLicense",
  tag: "Admin: licenses",
  summary: "Move a license to another product",
  description:
    "Its machines stay activated and from now on validate as machines of the new product. " +
    "A key limited to products must hold both.",
  auth: "licenses:write",
  errors: [...licenseErrors, "PRODUCT_NOT_FOUND", "EXTERNAL_ID_TAKEN"],
  schema: {
    params: LicenseKeyParams,
    body: Type.Object(
      { productSlug: Type.String({ minLength: 1, maxLength: limits.identifier }) },
      { additionalProperties: false },
    ),
    response: { 200: License },
  },
});

export const deleteLicense = contract({
  method: "DELETE",
  url: "/api/admin/licenses/:licenseKey",
  operationId: "deleteLicense",
  tag: "Admin: licenses",
  summary: "Delete a license without active machines",
  description: "Its ended activations go with it. 409 LICENSE_IN_USE while a machine holds a slot.",
  auth: "licenses:write",
  errors: [...licenseErrors, "LICENSE_IN_USE"],
  schema: {
    params: LicenseKeyParams,
    response: {
      200: Type.Object({
        deleted: Type.Literal(true),
        licenseKey: Type.String(),
        product: Type.String(),
      }),
    },
  },
});
