// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "dist/",
      "packages/*/dist/",
      "packages/publish/action/",
      "dist-bench/",
      "node_modules/",
      "test-results/",
      "bench/results/",
      "coverage/",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-non-null-assertion": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "no-console": "error",
    },
  },
  {
    files: ["bin/**/*.js", "scripts/**/*.js", "eslint.config.js"],
    languageOptions: { globals: { process: "readonly", URL: "readonly" } },
  },
);
