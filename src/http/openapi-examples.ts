/**
 * Examples for /docs: requests and answers of the license endpoints and publish, as the service
 * gives them (recorded from a run; test/admin/openapi.test.ts checks each against its schema).
 * Keyed by route URL, then by answer status; each example named for what it shows.
 */

interface Example {
  summary: string;
  value: unknown;
}

export interface OperationExamples {
  request?: Record<string, Example>;
  answers: Record<string, Record<string, Example>>;
}

const licenseKey = "7K2QD-M9XRT-4HZ1B-C8N3V-PQW5E";
const machine = { licenseKey, machineId: "machine-1", productSlug: "desktop-app" };
const activation = {
  machineId: "machine-1",
  machineName: "Ada's laptop",
  activatedAt: "2026-12-01T22:31:25.090Z",
};

/** A certificate checkout signed for `machine` on a license expiring at the end of 2027. */
const certificate =
  "eyJhbGciOiJFZERTQSIsImtpZCI6IlRoSWZZRFZsOTBpcXd4R18tZkw0aTZWS0RaOHQtZzBac0xJZktHbEkwb1kiLCJ0eX" +
  "AiOiJzaGlwa2V5LWxpY2Vuc2Urand0In0.eyJwcm9kdWN0IjoiZGVza3RvcC1hcHAiLCJlZGl0aW9uIjoicHJvIiwiZWRp" +
  "dGlvbk5hbWUiOiJQcm9mZXNzaW9uYWwiLCJmZWF0dXJlcyI6WyJzeW5jIiwiZXhwb3J0Il0sIm1heE1hY2hpbmVzIjoyLC" +
  "JsaWNlbnNlRXhwaXJlc0F0IjoiMjAyNy0xMi0zMVQyMzo1OTo1OS4wMDBaIiwic3ViIjoibWFjaGluZS0xIiwiaWF0Ijox" +
  "Nzk2MTY0Mjg1LCJleHAiOjE3OTY3NjkwODV9.E3tRI1lP6abBu1Ow_CJcNUYGMRPAveItaRSO1lfeg0TXy6qial2SMdKy5" +
  "UFJbdWlBdXZmCc6LQW3p9Asfv0ZBQ";

const publishRequest = {
  productSlug: "desktop-app",
  version: "v1.4.0",
  channel: "STABLE",
  releaseNotes: "## Fixes\n- Sync resumes after the laptop wakes",
  releases: [
    {
      platform: "WINDOWS",
      arch: "X64",
      downloadUrl: "https://downloads.example.com/app-1.4.0-x64.msi",
      fileSize: 84213760,
      sha512:
        "gctNOugnrcCNhMuF5Vta4vGdpfkaVmpzUISF86OB2/gSPd559oz8OSDZLcCp26PJTsF/TBj3MXdYGpuXiQ4Now==",
    },
    {
      platform: "MACOS",
      arch: "ARM64",
      downloadUrl: "https://downloads.example.com/app-1.4.0-arm64.dmg",
    },
  ],
};

export const operationExamples: Record<string, OperationExamples> = {
  "/api/license/activate": {
    request: {
      activate: {
        summary: "A machine, with its name and platform",
        value: { ...machine, machineName: "Ada's laptop", platform: "windows" },
      },
    },
    answers: {
      200: {
        activated: {
          summary: "Activated: the slots in use",
          value: {
            success: true,
            message: "Machine activated",
            activation,
            activeMachines: 1,
            maxMachines: 2,
          },
        },
        again: {
          summary: "Already activated",
          value: { success: true, message: "Machine already activated", activation },
        },
      },
      403: {
        full: {
          summary: "Every slot in use",
          value: {
            error: "Maximum machines reached",
            code: "MAX_MACHINES_REACHED",
            success: false,
          },
        },
      },
      404: {
        unknown: {
          summary: "No such license key",
          value: { error: "Invalid license key", code: "LICENSE_NOT_FOUND", success: false },
        },
      },
    },
  },
  "/api/license/validate": {
    request: { validate: { summary: "An activated machine", value: machine } },
    answers: {
      200: {
        valid: {
          summary: "Valid: the license's edition, features and slots",
          value: {
            valid: true,
            edition: "pro",
            editionName: "Professional",
            features: ["sync", "export"],
            expiresAt: "2027-12-31T23:59:59.000Z",
            maxMachines: 2,
            activeMachines: 1,
          },
        },
      },
      403: {
        notActivated: {
          summary: "A machine not activated, and a slot free",
          value: {
            error: "Machine not activated",
            code: "MACHINE_NOT_ACTIVATED",
            valid: false,
            canActivate: true,
          },
        },
      },
    },
  },
  "/api/license/deactivate": {
    request: {
      deactivate: { summary: "A machine", value: { licenseKey, machineId: "machine-1" } },
    },
    answers: {
      200: {
        deactivated: {
          summary: "Deactivated: its slot is free",
          value: { success: true, message: "Machine deactivated", machineId: "machine-1" },
        },
      },
      404: {
        notActivated: {
          summary: "The machine holds no activation",
          value: {
            error: "Machine is not activated",
            code: "ACTIVATION_NOT_FOUND",
            success: false,
          },
        },
      },
    },
  },
  "/api/license/checkout": {
    request: { checkout: { summary: "An activated machine", value: machine } },
    answers: {
      200: {
        certificate: {
          summary: "A certificate for the product's offline period (7 days by default)",
          value: { success: true, certificate, expiresAt: "2026-12-08T22:31:25.000Z" },
        },
      },
    },
  },
  "/api/releases/publish": {
    request: {
      publish: { summary: "A version for Windows and macOS, with notes", value: publishRequest },
      rollout: {
        summary: "The same version again, into a rollout to 10 % of machines",
        value: { ...publishRequest, rollout: { percent: 10 } },
      },
    },
    answers: {
      200: {
        created: {
          summary: "Published",
          value: {
            product: "Desktop App",
            version: "1.4.0",
            channel: "STABLE",
            releases: [
              { platform: "WINDOWS", arch: "X64", status: "created" },
              { platform: "MACOS", arch: "ARM64", status: "created" },
            ],
          },
        },
        updated: {
          summary: "Published again, into a rollout",
          value: {
            product: "Desktop App",
            version: "1.4.0",
            channel: "STABLE",
            releases: [
              { platform: "WINDOWS", arch: "X64", status: "updated" },
              { platform: "MACOS", arch: "ARM64", status: "updated" },
            ],
            critical: false,
            rollout: {
              state: "rolling",
              percent: 10,
              stepHours: null,
              startedAt: "2026-12-01T22:31:25.211Z",
              pausedAt: null,
            },
          },
        },
      },
      401: {
        noKey: {
          summary: "No API key, or an unknown one",
          value: { error: "Invalid or missing API key", code: "INVALID_API_KEY" },
        },
      },
      409: {
        version: {
          summary: "A version that is not semver (1.4)",
          value: { error: "Invalid version format", code: "INVALID_VERSION", field: "version" },
        },
      },
    },
  },
};
