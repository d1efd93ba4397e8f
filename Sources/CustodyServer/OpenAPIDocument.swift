// swift-format-ignore-file
// (The document is embedded byte for byte: scripts/openapi-sync.sh.)
/// The OpenAPI 3.1 description of every endpoint, served at `GET /openapi.json`. The source is
/// `docs/openapi.json`, edited by hand; `scripts/openapi-sync.sh` copies it here byte for byte
/// (a test fails while the two differ, and checks that every route is described).
enum OpenAPIDocument {
    static let bytes: [UInt8] = Array(text.utf8)

    static let text = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "Custody decision service",
    "version": "1",
    "description": "Decisions, policy, changes and protection for services enforcing data-transfer policy. Every /v1 route needs `Authorization: Bearer custody_\u2026` with its scope; errors are JSON `{\"error\", \"code\", ...}` (the `Error` schema; `code` is one of a closed set). What holds for every route, and so is not repeated below: a query parameter the route does not take, or one given twice, is a 400 `invalid-parameter` naming it (routes listed without parameters take none); a method a path does not take is a 405 `method-not-allowed` with an `Allow` header (`HEAD` works wherever `GET` does); a method the service does not know (`TRACE`, `PROPFIND`, ...) is a 501 `not-implemented`; a path that is no route is a 404 `not-found`; a request that is not valid HTTP/1.1 is a 400 `malformed-request`; a body over the limit (16 MiB by default) is a 413 `too-large`, refused before it is sent when the request says `Expect: 100-continue`; any other `Expect` is a 417 `expectation-failed`; a body in a content coding (`Content-Encoding: gzip`) is a 415 `unsupported-content-encoding`; a body that has not arrived within the body deadline (60 s) is a 408 `body-timeout`; a request line and header fields over 16 KiB, or more than 100 fields, are a 431 `headers-too-large` (the last three close the connection). Request bodies are read as sent, whatever their `Content-Type`. Every answer carries `Custody-Request-Id`; a replica that lost its shared state adds `Custody-Stale: true` and `Custody-State-Revision` (docs/fleet.md)."
  },
  "servers": [
    {
      "url": "http://127.0.0.1:8080"
    }
  ],
  "paths": {
    "/healthz": {
      "get": {
        "summary": "The service is alive.",
        "operationId": "health",
        "security": [],
        "responses": {
          "200": {
            "description": "Alive.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "status": {
                      "const": "alive"
                    }
                  },
                  "required": [
                    "status"
                  ]
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          }
        },
        "description": "Takes no query parameter. No token needed. The path takes GET, HEAD; any other method is a 405 `method-not-allowed` with `Allow: GET, HEAD`."
      }
    },
    "/readyz": {
      "get": {
        "summary": "The service is ready: a bundle is in force and the replica is current with its state (never waits for the state).",
        "operationId": "ready",
        "security": [],
        "responses": {
          "200": {
            "description": "Ready.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Readiness"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "description": "Not ready; `problems` says why.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Readiness"
                }
              }
            }
          }
        },
        "description": "Takes no query parameter. No token needed. The path takes GET, HEAD; any other method is a 405 `method-not-allowed` with `Allow: GET, HEAD`."
      }
    },
    "/metrics": {
      "get": {
        "summary": "Prometheus metrics.",
        "operationId": "metrics",
        "security": [],
        "responses": {
          "200": {
            "description": "Prometheus text exposition format.",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          }
        },
        "description": "Takes no query parameter. No token needed. The path takes GET, HEAD; any other method is a 405 `method-not-allowed` with `Allow: GET, HEAD`."
      }
    },
    "/openapi.json": {
      "get": {
        "summary": "This document.",
        "operationId": "openapi",
        "security": [],
        "responses": {
          "200": {
            "description": "OpenAPI 3.1.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          }
        },
        "description": "Takes no query parameter. No token needed. The path takes GET, HEAD; any other method is a 405 `method-not-allowed` with `Allow: GET, HEAD`."
      }
    },
    "/v1/decisions": {
      "post": {
        "summary": "Decide one query.",
        "operationId": "decide",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "decide",
        "description": "The body is one query, the JSON of a `custody decide` line. The answer is that line's decision JSON, with `revision` and `eventId` (and `decisionId` when decision auditing is on; the audit entry is written before the answer). Needs a token with the `decide` scope (`admin` grants every scope). The path takes POST; any other method is a 405 `method-not-allowed` with `Allow: POST`.",
        "parameters": [
          {
            "$ref": "#/components/parameters/Platform"
          },
          {
            "$ref": "#/components/parameters/App"
          },
          {
            "$ref": "#/components/parameters/ManagementLevel"
          },
          {
            "$ref": "#/components/parameters/Reasons"
          },
          {
            "$ref": "#/components/parameters/StrictAccounts"
          },
          {
            "$ref": "#/components/parameters/Explain"
          },
          {
            "$ref": "#/components/parameters/MinRevision"
          },
          {
            "$ref": "#/components/parameters/MinEventId"
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/Query"
              },
              "examples": {
                "saveTo": {
                  "summary": "May Alice save to Dropbox?",
                  "value": {
                    "action": "saveTo",
                    "owner": "alice@contoso.com",
                    "location": "dropbox"
                  }
                },
                "view": {
                  "summary": "May a view of two accounts be printed?",
                  "value": {
                    "action": "print",
                    "accounts": [
                      "alice@contoso.com",
                      "bob@contoso.com"
                    ]
                  }
                }
              }
            }
          },
          "description": "One query; an empty body is a 400 `invalid-query`."
        },
        "responses": {
          "200": {
            "description": "The decision.",
            "headers": {
              "Custody-Revision": {
                "schema": {
                  "type": "string"
                },
                "description": "The bundle revision (content hash) the answer was decided at.",
                "required": true
              },
              "Custody-Event-Id": {
                "schema": {
                  "$ref": "#/components/schemas/EventId"
                },
                "description": "The newest event id the service knew when it decided.",
                "required": true
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Decision"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "408": {
            "$ref": "#/components/responses/BodyTimeout"
          },
          "409": {
            "$ref": "#/components/responses/Stale"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/decisions/batch": {
      "post": {
        "summary": "Decide many queries, streamed.",
        "operationId": "decideBatch",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "decide",
        "description": "JSON Lines in, one answer per line out, in order, streamed as they are decided. Each line is answered on its own: a bad line gets an error object (`{\"error\": \"line N, column C: ...\", \"line\": N}`) in its place. The whole batch is decided on one snapshot, whose revision and event id are in the response headers. Past the batch limit (10,000 queries by default), one error line says so and the rest is not answered; a line longer than the line limit (64 KiB) gets an error line. Needs a token with the `decide` scope (`admin` grants every scope). The path takes POST; any other method is a 405 `method-not-allowed` with `Allow: POST`.",
        "parameters": [
          {
            "$ref": "#/components/parameters/Platform"
          },
          {
            "$ref": "#/components/parameters/App"
          },
          {
            "$ref": "#/components/parameters/ManagementLevel"
          },
          {
            "$ref": "#/components/parameters/Reasons"
          },
          {
            "$ref": "#/components/parameters/StrictAccounts"
          },
          {
            "$ref": "#/components/parameters/Explain"
          },
          {
            "$ref": "#/components/parameters/MinRevision"
          },
          {
            "$ref": "#/components/parameters/MinEventId"
          }
        ],
        "requestBody": {
          "required": false,
          "description": "JSON Lines: one query a line (an empty body answers nothing). The body is read as sent, whatever its `Content-Type`: `application/x-ndjson`, or `application/octet-stream` for a client that sends bytes.",
          "content": {
            "application/x-ndjson": {
              "schema": {
                "type": "string"
              },
              "example": "{\"action\":\"print\",\"account\":\"alice@contoso.com\"}\n{\"action\":\"print\",\"account\":\"bob@contoso.com\"}\n"
            },
            "application/octet-stream": {
              "schema": {
                "$ref": "#/components/schemas/Binary"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "One JSON answer (a decision or an error object) per input line.",
            "headers": {
              "Custody-Revision": {
                "schema": {
                  "type": "string"
                },
                "description": "The bundle revision (content hash) the answer was decided at.",
                "required": true
              },
              "Custody-Event-Id": {
                "schema": {
                  "$ref": "#/components/schemas/EventId"
                },
                "description": "The newest event id the service knew when it decided.",
                "required": true
              }
            },
            "content": {
              "application/x-ndjson": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "408": {
            "$ref": "#/components/responses/BodyTimeout"
          },
          "409": {
            "$ref": "#/components/responses/Stale"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/decisions/receive": {
      "post": {
        "summary": "Decide whether a shared item may be received, by its own protection tag.",
        "operationId": "receive",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "decide",
        "description": "The body is the shared item: an envelope, its first bytes (the header is enough; at most 4 KiB are read), or untagged data. The owner is read from the envelope, as Intune's canReceiveSharedFile: does, and the receive query is decided. An encrypted envelope's owner is verified (its data-key wrap must open under that owner's key): a changed header, or an owner whose keys were wiped, is a 422. An unencrypted envelope's owner is a claim: the item is allowed only when it would be both as that owner's data and as untagged data. Needs a token with the `decide` scope (`admin` grants every scope). The path takes POST; any other method is a 405 `method-not-allowed` with `Allow: POST`.",
        "parameters": [
          {
            "name": "receiver",
            "in": "query",
            "schema": {
              "type": "string",
              "maxLength": 1020,
              "pattern": "^([^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]*[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069\\s][^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]*)?$"
            },
            "description": "The receiving account: a UPN, or an OID in GUID form, as `AccountId` (none, or empty: no account)."
          },
          {
            "$ref": "#/components/parameters/Platform"
          },
          {
            "$ref": "#/components/parameters/App"
          },
          {
            "$ref": "#/components/parameters/ManagementLevel"
          },
          {
            "$ref": "#/components/parameters/MinRevision"
          },
          {
            "$ref": "#/components/parameters/MinEventId"
          }
        ],
        "requestBody": {
          "required": false,
          "description": "The shared item (none: untagged data). Its first 4 KiB are read; the rest is read and dropped, within the body limit.",
          "content": {
            "application/octet-stream": {
              "schema": {
                "$ref": "#/components/schemas/Binary"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The receive decision, with `dataOwner` (the owner the envelope names; null when untagged), `ownerVerified` and `revision`.",
            "headers": {
              "Custody-Revision": {
                "schema": {
                  "type": "string"
                },
                "description": "The bundle revision (content hash) the answer was decided at.",
                "required": true
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Decision"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "408": {
            "$ref": "#/components/responses/BodyTimeout"
          },
          "409": {
            "$ref": "#/components/responses/Stale"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "422": {
            "$ref": "#/components/responses/Unprocessable"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/accounts/{account}/policy": {
      "get": {
        "summary": "An account's effective policy, each setting with its sources.",
        "operationId": "accountPolicy",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "read",
        "description": "Needs a token with the `read` scope (`admin` grants every scope). The path takes GET, HEAD; any other method is a 405 `method-not-allowed` with `Allow: GET, HEAD`.",
        "parameters": [
          {
            "$ref": "#/components/parameters/Account"
          },
          {
            "$ref": "#/components/parameters/Platform"
          },
          {
            "$ref": "#/components/parameters/App"
          },
          {
            "$ref": "#/components/parameters/ManagementLevel"
          },
          {
            "$ref": "#/components/parameters/MinRevision"
          },
          {
            "$ref": "#/components/parameters/MinEventId"
          }
        ],
        "responses": {
          "200": {
            "description": "As `custody policy show`: one report, or, when no platform is known (neither the request, the service nor the bundle's record names one) for a bundle of iOS and Android policies, an array of one report per platform.",
            "content": {
              "application/json": {
                "schema": {
                  "oneOf": [
                    {
                      "$ref": "#/components/schemas/PolicyReport"
                    },
                    {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/PolicyReport"
                      },
                      "minItems": 2
                    }
                  ]
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "409": {
            "$ref": "#/components/responses/Stale"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "422": {
            "$ref": "#/components/responses/Unprocessable"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/accounts/{account}/configuration": {
      "get": {
        "summary": "The app configuration an account receives.",
        "operationId": "accountConfiguration",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "read",
        "description": "Needs a token with the `read` scope (`admin` grants every scope). The path takes GET, HEAD; any other method is a 405 `method-not-allowed` with `Allow: GET, HEAD`.",
        "parameters": [
          {
            "$ref": "#/components/parameters/Account"
          },
          {
            "$ref": "#/components/parameters/Platform"
          },
          {
            "$ref": "#/components/parameters/App"
          },
          {
            "$ref": "#/components/parameters/ManagementLevel"
          },
          {
            "$ref": "#/components/parameters/MinRevision"
          },
          {
            "$ref": "#/components/parameters/MinEventId"
          }
        ],
        "responses": {
          "200": {
            "description": "As `custody config show`: fullData, policies, keys; `null` for an unmanaged or unknown account.",
            "content": {
              "application/json": {
                "schema": {
                  "oneOf": [
                    {
                      "$ref": "#/components/schemas/ConfigurationReport"
                    },
                    {
                      "type": "null"
                    }
                  ]
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "409": {
            "$ref": "#/components/responses/Stale"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "422": {
            "$ref": "#/components/responses/Unprocessable"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/bundle": {
      "get": {
        "summary": "The bundle in force.",
        "operationId": "bundle",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "read",
        "description": "Takes no query parameter. Needs a token with the `read` scope (`admin` grants every scope). The path takes GET, HEAD, PUT; any other method is a 405 `method-not-allowed` with `Allow: GET, HEAD, PUT`.",
        "responses": {
          "200": {
            "description": "Its revision, source, files and warnings.",
            "headers": {
              "ETag": {
                "schema": {
                  "type": "string"
                },
                "description": "The revision, quoted.",
                "required": true
              },
              "Custody-Revision": {
                "schema": {
                  "type": "string"
                },
                "description": "The revision in force.",
                "required": true
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Bundle"
                }
              }
            },
            "links": {
              "decide": {
                "operationId": "decide",
                "parameters": {
                  "header.Custody-Min-Revision": "$response.body#/revision"
                },
                "description": "Decide on this revision or a later one."
              },
              "accountPolicy": {
                "operationId": "accountPolicy",
                "parameters": {
                  "header.Custody-Min-Revision": "$response.body#/revision",
                  "path.account": "alice@contoso.com"
                },
                "description": "An account's policy on this revision or a later one."
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      },
      "put": {
        "summary": "Make a bundle the policy in force.",
        "operationId": "putBundle",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "admin",
        "description": "Takes no query parameter. Validated and resolved completely, stored with its revision, then put in force, as `custody apply` does; one that does not load, or that has no tenant.json and no protection policy without `allowEmpty: true`, is refused (422, with its located diagnostics) and recorded as rejected, and the policy in force stays. Needs a token with the `admin` scope (`admin` grants every scope). The path takes GET, HEAD, PUT; any other method is a 405 `method-not-allowed` with `Allow: GET, HEAD, PUT`.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/BundleRequest"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "Applied (or already in force).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Applied"
                }
              }
            },
            "headers": {
              "Custody-Revision": {
                "schema": {
                  "type": "string"
                },
                "description": "The revision now in force.",
                "required": true
              }
            },
            "links": {
              "decide": {
                "operationId": "decide",
                "parameters": {
                  "header.Custody-Min-Revision": "$response.body#/revision"
                },
                "description": "Decide on this revision or a later one."
              },
              "accountPolicy": {
                "operationId": "accountPolicy",
                "parameters": {
                  "header.Custody-Min-Revision": "$response.body#/revision",
                  "path.account": "alice@contoso.com"
                },
                "description": "An account's policy on this revision or a later one."
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "408": {
            "$ref": "#/components/responses/BodyTimeout"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "422": {
            "$ref": "#/components/responses/Unprocessable"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/events": {
      "get": {
        "summary": "Every change, as Server-Sent Events.",
        "operationId": "events",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "events",
        "description": "Each event has its id in the state's event log (`id:`), its name (`event:`, a `StreamEventName`) and its JSON (`data:`, as `custody watch` prints it). `Last-Event-ID` (or `lastEventId`; the header wins when both are given, and both are checked) resumes after that event from the log; when the log no longer holds every event after it, or the id is newer than the state's newest, a `reset` event with the newest id says so (read the state afresh). A `ready` event marks the switch to live events; a comment line is sent as heartbeat every 15 s. Every bundle put in force ends its events with `bundleApplied`. A stream is a cursor into the log, not a queue: however far a client falls behind, the service holds nothing more for it, and it is sent what it missed at its own pace. A stream whose token is revoked ends within a second with an `unauthorized` event; on shutdown every stream ends with a `shutdown` event. Needs a token with the `events` scope (`admin` grants every scope). The path takes GET, HEAD; any other method is a 405 `method-not-allowed` with `Allow: GET, HEAD`.",
        "parameters": [
          {
            "name": "Last-Event-ID",
            "in": "header",
            "schema": {
              "$ref": "#/components/schemas/EventId"
            },
            "description": "Resume after this event (digits only)."
          },
          {
            "name": "lastEventId",
            "in": "query",
            "schema": {
              "$ref": "#/components/schemas/EventId"
            },
            "description": "Resume after this event, for clients that cannot set headers (digits only)."
          }
        ],
        "responses": {
          "200": {
            "description": "The event stream, which does not end until the service stops or the token is revoked: events named by `StreamEventName`, ids `EventId`.",
            "content": {
              "text/event-stream": {
                "schema": {
                  "type": "string"
                }
              }
            },
            "headers": {
              "Cache-Control": {
                "schema": {
                  "type": "string",
                  "const": "no-store"
                },
                "required": true
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/protect": {
      "post": {
        "summary": "Protect a buffer for an owner.",
        "operationId": "protect",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "protect",
        "description": "Raw bytes in, the envelope out: encrypted unless the owner's policy in force says it need not be. An owner the policy does not know needs `unmanaged=true` (tagged only) or `encrypt=true`; `unmanaged=true` is refused for an account whose policy requires encryption. Needs a token with the `protect` scope (`admin` grants every scope). The path takes POST; any other method is a 405 `method-not-allowed` with `Allow: POST`.",
        "parameters": [
          {
            "name": "owner",
            "in": "query",
            "required": true,
            "schema": {
              "$ref": "#/components/schemas/AccountId"
            },
            "description": "The data's owner: a UPN, or an OID in GUID form.",
            "examples": {
              "upn": {
                "summary": "An account by its UPN",
                "value": "alice@contoso.com"
              }
            }
          },
          {
            "name": "encrypt",
            "in": "query",
            "schema": {
              "type": "boolean",
              "default": false
            },
            "description": "true: encrypt whatever the policy says (a key of the owner's own for an account the policy does not know)."
          },
          {
            "name": "unmanaged",
            "in": "query",
            "schema": {
              "type": "boolean",
              "default": false
            },
            "description": "true: tag only, for an owner the policy does not manage; refused (422 `refused`) for one whose policy requires encryption, and with `encrypt=true` (400)."
          },
          {
            "$ref": "#/components/parameters/Platform"
          },
          {
            "$ref": "#/components/parameters/App"
          },
          {
            "$ref": "#/components/parameters/ManagementLevel"
          }
        ],
        "requestBody": {
          "required": true,
          "description": "The bytes to protect; an empty body is a 400 `empty-data`.",
          "content": {
            "application/octet-stream": {
              "schema": {
                "type": "string",
                "format": "binary",
                "minLength": 1
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The envelope.",
            "headers": {
              "Custody-Owner": {
                "schema": {
                  "type": "string"
                },
                "description": "The owner the envelope names (`oid:` or `upn:` form).",
                "required": true
              },
              "Custody-Encrypted": {
                "schema": {
                  "type": "string",
                  "enum": [
                    "true",
                    "false"
                  ]
                },
                "description": "Whether the envelope is encrypted.",
                "required": true
              }
            },
            "content": {
              "application/octet-stream": {
                "schema": {
                  "$ref": "#/components/schemas/Binary"
                }
              }
            },
            "links": {
              "unprotect": {
                "operationId": "unprotect",
                "requestBody": "$response.body",
                "description": "The envelope opens to the bytes protected."
              },
              "receive": {
                "operationId": "receive",
                "requestBody": "$response.body",
                "description": "Whether the envelope may be received, its owner read from its own tag."
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "408": {
            "$ref": "#/components/responses/BodyTimeout"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "422": {
            "$ref": "#/components/responses/Unprocessable"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/unprotect": {
      "post": {
        "summary": "Open an envelope.",
        "operationId": "unprotect",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "protect",
        "description": "Takes no query parameter. An envelope in, its plaintext out, whole or not at all: anything that is not an envelope, was changed or truncated, or whose owner was wiped is a 422 whose `code` names why (`decrypt-failed`, `key-unavailable`, `malformed-envelope`, `invalid-arguments`). Needs a token with the `protect` scope (`admin` grants every scope). The path takes POST; any other method is a 405 `method-not-allowed` with `Allow: POST`.",
        "requestBody": {
          "required": true,
          "description": "The envelope (an empty body is a 422 `invalid-arguments`). Its limit is the body limit plus 64 KiB, the envelope's own bytes.",
          "content": {
            "application/octet-stream": {
              "schema": {
                "$ref": "#/components/schemas/Binary"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The plaintext.",
            "headers": {
              "Custody-Owner": {
                "schema": {
                  "type": "string"
                },
                "description": "The owner the envelope names.",
                "required": true
              }
            },
            "content": {
              "application/octet-stream": {
                "schema": {
                  "$ref": "#/components/schemas/Binary"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "408": {
            "$ref": "#/components/responses/BodyTimeout"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "422": {
            "$ref": "#/components/responses/Unprocessable"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/accounts/{account}/wipe": {
      "post": {
        "summary": "Selective wipe of an account.",
        "operationId": "wipe",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "admin",
        "description": "Takes no query parameter and no body (a body is a 400 `unexpected-body`). As `custody wipe`: the account's keys under every identifier it has or had in this state, its secrets and check-ins, in one transaction. An account the installation cannot resolve is a 404; nothing is reported wiped that was not. Needs a token with the `admin` scope (`admin` grants every scope). The path takes POST; any other method is a 405 `method-not-allowed` with `Allow: POST`.",
        "parameters": [
          {
            "$ref": "#/components/parameters/Account"
          }
        ],
        "responses": {
          "200": {
            "description": "What was deleted.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Wiped"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "422": {
            "$ref": "#/components/responses/Unprocessable"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/accounts/{account}/keys/rotate": {
      "post": {
        "summary": "Add a new version of an account's key.",
        "operationId": "rotateKey",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "admin",
        "description": "Takes no query parameter and no body (a body is a 400 `unexpected-body`). Needs a token with the `admin` scope (`admin` grants every scope). The path takes POST; any other method is a 405 `method-not-allowed` with `Allow: POST`.",
        "parameters": [
          {
            "$ref": "#/components/parameters/Account"
          }
        ],
        "responses": {
          "200": {
            "description": "The new version.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Rotated"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "422": {
            "$ref": "#/components/responses/Unprocessable"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        }
      }
    },
    "/v1/graph/sync": {
      "post": {
        "summary": "Sync the policy from Microsoft Graph now.",
        "operationId": "graphSync",
        "security": [
          {
            "bearer": []
          }
        ],
        "x-custody-scope": "admin",
        "description": "Takes no query parameter and no body (a body is a 400 `unexpected-body`). Reads the tenant (after the sync in progress, if any) and applies its bundle, as custody graph sync --state does; the outcome is also announced as a `policySynced` event and reported by /readyz and /metrics. Needs a token with the `admin` scope (`admin` grants every scope). The path takes POST; any other method is a 405 `method-not-allowed` with `Allow: POST`.",
        "responses": {
          "200": {
            "description": "The sync ran and its bundle is in force (`applied`, or `unchanged` when it was already).",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/PolicySync"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
          },
          "404": {
            "description": "The service does not sync from Graph (`graph-not-configured`): start it with --graph FILE.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "409": {
            "description": "Another process or replica on this state is syncing now (`graph-sync-busy`, with `Retry-After`); its result reaches this service through the state.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
          },
          "415": {
            "$ref": "#/components/responses/UnsupportedContentEncoding"
          },
          "417": {
            "$ref": "#/components/responses/ExpectationFailed"
          },
          "431": {
            "$ref": "#/components/responses/HeadersTooLarge"
          },
          "502": {
            "description": "The sync failed (`graph-sync-failed`, with the `sync`): Graph or the token service refused or kept failing, or the tenant's bundle does not load. The policy in force is unchanged.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "A token from `custody tokens create --scope ...`."
      }
    },
    "parameters": {
      "Platform": {
        "name": "platform",
        "in": "query",
        "schema": {
          "$ref": "#/components/schemas/Platform"
        },
        "description": "Evaluate for this platform (default: the service's `--platform`, or the platform `custody apply` recorded)."
      },
      "App": {
        "name": "app",
        "in": "query",
        "schema": {
          "$ref": "#/components/schemas/AppId"
        },
        "description": "Evaluate for this app's bundle or package id (default: the service's context)."
      },
      "ManagementLevel": {
        "name": "managementLevel",
        "in": "query",
        "schema": {
          "$ref": "#/components/schemas/ManagementLevel"
        },
        "description": "Evaluate for this device management state (default: the service's context)."
      },
      "Reasons": {
        "name": "reasons",
        "in": "query",
        "schema": {
          "type": "boolean",
          "default": true
        },
        "description": "false: answers carry setting and policies but no reason text."
      },
      "StrictAccounts": {
        "name": "strictAccounts",
        "in": "query",
        "schema": {
          "type": "boolean",
          "default": false
        },
        "description": "true: a query naming an account the tenant does not know is an error."
      },
      "Explain": {
        "name": "explain",
        "in": "query",
        "schema": {
          "type": "boolean",
          "default": false
        },
        "description": "true: each answer adds the rule behind it: `rule`, `basis` (documented or inferred) and `source`."
      },
      "MinRevision": {
        "name": "Custody-Min-Revision",
        "in": "header",
        "schema": {
          "type": "string",
          "pattern": "^[0-9a-f]{1,128}$"
        },
        "description": "Refuse (409) unless this revision, or one applied after it, is in force."
      },
      "MinEventId": {
        "name": "Custody-Min-Event-Id",
        "in": "header",
        "schema": {
          "$ref": "#/components/schemas/EventId"
        },
        "description": "Refuse (409) unless the service has seen events up to this id."
      },
      "Account": {
        "name": "account",
        "in": "path",
        "required": true,
        "schema": {
          "$ref": "#/components/schemas/AccountId"
        },
        "description": "A UPN, or an OID in GUID form, percent-encoded as one path segment (`alice%40contoso.com`).",
        "examples": {
          "upn": {
            "summary": "An account by its UPN",
            "value": "alice@contoso.com"
          },
          "oid": {
            "summary": "An account by its OID",
            "value": "a1f0c7d2-5b1e-4c3a-9e8f-000000000001"
          }
        }
      }
    },
    "schemas": {
      "AccountId": {
        "type": "string",
        "minLength": 1,
        "maxLength": 1020,
        "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]*[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069\\s][^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]*$",
        "description": "An account: a UPN, or an OID in GUID form (optionally in braces). At most 1,020 bytes of UTF-8 (the length is checked in bytes: a non-ASCII character counts for several), leading and trailing white space ignored, never blank, and never holding a control character (U+0000 to U+001F, U+007F to U+009F), a line or paragraph separator or a bidirectional-formatting character (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069): 400 `invalid-parameter` otherwise."
      },
      "Platform": {
        "type": "string",
        "enum": [
          "ios",
          "android"
        ]
      },
      "AppId": {
        "type": "string",
        "minLength": 1,
        "maxLength": 256,
        "pattern": "^[^\\u0000-\\u001F\\u007F]+$",
        "description": "An app's bundle or package id: 1 to 256 bytes of UTF-8 without a control character (U+0000 to U+001F, U+007F); an empty one is refused (400 `invalid-parameter`)."
      },
      "ManagementLevel": {
        "type": "string",
        "enum": [
          "unspecified",
          "unmanaged",
          "mdm",
          "androidEnterprise",
          "androidEnterpriseDedicatedDevicesWithAzureAdSharedMode",
          "androidOpenSourceProjectUserAssociated",
          "androidOpenSourceProjectUserless"
        ],
        "description": "The device's management state (Graph's appManagementLevel), matched against targetedAppManagementLevels."
      },
      "EventId": {
        "type": "integer",
        "minimum": 0,
        "maximum": 9223372036854775807,
        "description": "An id in the state's event log: a whole number from 0 to 9223372036854775807."
      },
      "Action": {
        "type": "string",
        "enum": [
          "saveTo",
          "openFrom",
          "share",
          "receive",
          "copyOut",
          "pasteIn",
          "print",
          "backup",
          "screenCapture",
          "encryptionRequired",
          "notifications",
          "accountAllowed",
          "offlineAccess",
          "appSharing",
          "appIntents",
          "contactSync"
        ]
      },
      "Account": {
        "oneOf": [
          {
            "type": "string",
            "maxLength": 1020,
            "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]*$"
          },
          {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "oid": {
                "type": [
                  "string",
                  "null"
                ],
                "maxLength": 1020,
                "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]*$"
              },
              "upn": {
                "type": [
                  "string",
                  "null"
                ],
                "maxLength": 1020,
                "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]*$"
              }
            }
          },
          {
            "type": "null"
          }
        ],
        "description": "An account in a query: a UPN or an OID string (at most 1,020 bytes, no control or bidirectional-formatting character; blank means no account), an `{\"oid\", \"upn\"}` object (either may be null), or null (no account)."
      },
      "AccountList": {
        "type": "array",
        "items": {
          "$ref": "#/components/schemas/Account"
        },
        "minItems": 1,
        "maxItems": 64,
        "description": "A view of several accounts: decided with the most restrictive of their answers."
      },
      "Query": {
        "description": "One `custody decide` query: an object whose `action` says which fields it takes (docs/decisions.md). A field the action does not take, a field given twice, or a missing required one is a 400 `invalid-query` naming its line and column.",
        "oneOf": [
          {
            "$ref": "#/components/schemas/QuerySaveTo"
          },
          {
            "$ref": "#/components/schemas/QueryOpenFrom"
          },
          {
            "$ref": "#/components/schemas/QueryShare"
          },
          {
            "$ref": "#/components/schemas/QueryReceive"
          },
          {
            "$ref": "#/components/schemas/QueryCopyOut"
          },
          {
            "$ref": "#/components/schemas/QueryPasteIn"
          },
          {
            "$ref": "#/components/schemas/QueryPrint"
          },
          {
            "$ref": "#/components/schemas/QueryBackup"
          },
          {
            "$ref": "#/components/schemas/QueryScreenCapture"
          },
          {
            "$ref": "#/components/schemas/QueryEncryptionRequired"
          },
          {
            "$ref": "#/components/schemas/QueryNotifications"
          },
          {
            "$ref": "#/components/schemas/QueryAccountAllowed"
          },
          {
            "$ref": "#/components/schemas/QueryOfflineAccess"
          },
          {
            "$ref": "#/components/schemas/QueryAppSharing"
          },
          {
            "$ref": "#/components/schemas/QueryAppIntents"
          },
          {
            "$ref": "#/components/schemas/QueryContactSync"
          }
        ],
        "discriminator": {
          "propertyName": "action",
          "mapping": {
            "saveTo": "#/components/schemas/QuerySaveTo",
            "openFrom": "#/components/schemas/QueryOpenFrom",
            "share": "#/components/schemas/QueryShare",
            "receive": "#/components/schemas/QueryReceive",
            "copyOut": "#/components/schemas/QueryCopyOut",
            "pasteIn": "#/components/schemas/QueryPasteIn",
            "print": "#/components/schemas/QueryPrint",
            "backup": "#/components/schemas/QueryBackup",
            "screenCapture": "#/components/schemas/QueryScreenCapture",
            "encryptionRequired": "#/components/schemas/QueryEncryptionRequired",
            "notifications": "#/components/schemas/QueryNotifications",
            "accountAllowed": "#/components/schemas/QueryAccountAllowed",
            "offlineAccess": "#/components/schemas/QueryOfflineAccess",
            "appSharing": "#/components/schemas/QueryAppSharing",
            "appIntents": "#/components/schemas/QueryAppIntents",
            "contactSync": "#/components/schemas/QueryContactSync"
          }
        }
      },
      "QuerySaveTo": {
        "type": "object",
        "description": "Save the owner's data to a location (`location`, whose account is `locationAccount`).",
        "required": [
          "action",
          "owner",
          "location"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "saveTo"
          },
          "owner": {
            "$ref": "#/components/schemas/Account"
          },
          "location": {
            "type": "string",
            "enum": [
              "other",
              "oneDriveForBusiness",
              "sharePoint",
              "box",
              "dropbox",
              "googleDrive",
              "localDrive",
              "cameraRoll",
              "accountDocument",
              "iManage",
              "egnyte"
            ]
          },
          "locationAccount": {
            "$ref": "#/components/schemas/Account"
          }
        }
      },
      "QueryOpenFrom": {
        "type": "object",
        "description": "Open data from a location into the receiving account.",
        "required": [
          "action",
          "receiver",
          "location"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "openFrom"
          },
          "receiver": {
            "$ref": "#/components/schemas/Account"
          },
          "location": {
            "type": "string",
            "enum": [
              "other",
              "oneDriveForBusiness",
              "sharePoint",
              "camera",
              "localStorage",
              "photos",
              "accountDocument",
              "box",
              "iManage",
              "egnyte"
            ]
          },
          "locationAccount": {
            "$ref": "#/components/schemas/Account"
          }
        }
      },
      "QueryShare": {
        "type": "object",
        "description": "Share the owner's data with target apps. Exactly one of `owner` and `owners`.",
        "required": [
          "action",
          "targets"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "share"
          },
          "targets": {
            "type": "array",
            "items": {
              "type": "string",
              "minLength": 1
            },
            "minItems": 1,
            "description": "App ids, URL schemes or package ids."
          },
          "owner": {
            "$ref": "#/components/schemas/Account"
          },
          "owners": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "owner",
                "owners"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "owner"
                    ]
                  },
                  {
                    "required": [
                      "owners"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryReceive": {
        "type": "object",
        "description": "Receive data owned by `dataOwner` into the receiving account.",
        "required": [
          "action",
          "receiver"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "receive"
          },
          "receiver": {
            "$ref": "#/components/schemas/Account"
          },
          "dataOwner": {
            "$ref": "#/components/schemas/Account"
          }
        }
      },
      "QueryCopyOut": {
        "type": "object",
        "description": "Copy the owner's data out to the clipboard. Exactly one of `owner` and `owners`.",
        "required": [
          "action",
          "destinationManaged"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "copyOut"
          },
          "destinationManaged": {
            "type": "boolean"
          },
          "owner": {
            "$ref": "#/components/schemas/Account"
          },
          "length": {
            "type": [
              "integer",
              "null"
            ],
            "minimum": 0,
            "description": "The number of characters copied."
          },
          "owners": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "owner",
                "owners"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "owner"
                    ]
                  },
                  {
                    "required": [
                      "owners"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryPasteIn": {
        "type": "object",
        "description": "Paste into the owner's data. Exactly one of `owner` and `owners`.",
        "required": [
          "action",
          "sourceManaged"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "pasteIn"
          },
          "sourceManaged": {
            "type": "boolean"
          },
          "owner": {
            "$ref": "#/components/schemas/Account"
          },
          "owners": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "owner",
                "owners"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "owner"
                    ]
                  },
                  {
                    "required": [
                      "owners"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryPrint": {
        "type": "object",
        "description": "`print` for an account. Exactly one of `account` and `accounts`.",
        "required": [
          "action"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "print"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          },
          "accounts": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "account",
                "accounts"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "account"
                    ]
                  },
                  {
                    "required": [
                      "accounts"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryBackup": {
        "type": "object",
        "description": "`backup` for an account. Exactly one of `account` and `accounts`.",
        "required": [
          "action"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "backup"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          },
          "accounts": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "account",
                "accounts"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "account"
                    ]
                  },
                  {
                    "required": [
                      "accounts"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryScreenCapture": {
        "type": "object",
        "description": "`screenCapture` for an account. Exactly one of `account` and `accounts`.",
        "required": [
          "action"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "screenCapture"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          },
          "accounts": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "account",
                "accounts"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "account"
                    ]
                  },
                  {
                    "required": [
                      "accounts"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryEncryptionRequired": {
        "type": "object",
        "description": "`encryptionRequired` for an account. Exactly one of `account` and `accounts`.",
        "required": [
          "action"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "encryptionRequired"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          },
          "accounts": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "account",
                "accounts"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "account"
                    ]
                  },
                  {
                    "required": [
                      "accounts"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryNotifications": {
        "type": "object",
        "description": "`notifications` for an account. Exactly one of `account` and `accounts`.",
        "required": [
          "action"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "notifications"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          },
          "accounts": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "account",
                "accounts"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "account"
                    ]
                  },
                  {
                    "required": [
                      "accounts"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryAccountAllowed": {
        "type": "object",
        "description": "Whether the account may sign in to the app.",
        "required": [
          "action",
          "account"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "accountAllowed"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          }
        }
      },
      "QueryOfflineAccess": {
        "type": "object",
        "description": "Access after a time offline: exactly one of `offlineFor` (an ISO 8601 duration) and `lastCheckIn` (an RFC 3339 timestamp, with `now`, the time it is measured to, only beside it; default: the service's clock).",
        "required": [
          "action",
          "account"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "offlineAccess"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          },
          "offlineFor": {
            "type": "string",
            "description": "An ISO 8601 duration such as PT13H."
          },
          "lastCheckIn": {
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 timestamp such as 2026-11-21T08:00:00Z."
          },
          "now": {
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 timestamp; only with lastCheckIn."
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "offlineFor",
                "lastCheckIn"
              ]
            },
            {
              "required": [
                "offlineFor",
                "now"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "offlineFor"
                    ]
                  },
                  {
                    "required": [
                      "lastCheckIn"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryAppSharing": {
        "type": "object",
        "description": "`appSharing` for an account. Exactly one of `account` and `accounts`.",
        "required": [
          "action"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "appSharing"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          },
          "accounts": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "account",
                "accounts"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "account"
                    ]
                  },
                  {
                    "required": [
                      "accounts"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryAppIntents": {
        "type": "object",
        "description": "`appIntents` for an account. Exactly one of `account` and `accounts`.",
        "required": [
          "action"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "appIntents"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          },
          "accounts": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "account",
                "accounts"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "account"
                    ]
                  },
                  {
                    "required": [
                      "accounts"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "QueryContactSync": {
        "type": "object",
        "description": "`contactSync` for an account. Exactly one of `account` and `accounts`.",
        "required": [
          "action"
        ],
        "additionalProperties": false,
        "properties": {
          "action": {
            "const": "contactSync"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          },
          "accounts": {
            "$ref": "#/components/schemas/AccountList"
          }
        },
        "not": {
          "anyOf": [
            {
              "required": [
                "account",
                "accounts"
              ]
            },
            {
              "not": {
                "anyOf": [
                  {
                    "required": [
                      "account"
                    ]
                  },
                  {
                    "required": [
                      "accounts"
                    ]
                  }
                ]
              }
            }
          ]
        }
      },
      "TargetDecision": {
        "type": "object",
        "required": [
          "id",
          "allowed"
        ],
        "description": "One target of a share, with its own answer.",
        "properties": {
          "id": {
            "type": "string"
          },
          "allowed": {
            "type": "boolean"
          },
          "reason": {
            "type": "string"
          },
          "setting": {
            "type": [
              "string",
              "null"
            ]
          },
          "policies": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "rule": {
            "type": "string"
          },
          "basis": {
            "type": "string",
            "enum": [
              "documented",
              "inferred"
            ]
          },
          "source": {
            "type": "string"
          }
        }
      },
      "Decision": {
        "type": "object",
        "required": [
          "action",
          "allowed"
        ],
        "properties": {
          "action": {
            "$ref": "#/components/schemas/Action"
          },
          "allowed": {
            "type": "boolean"
          },
          "reason": {
            "type": "string"
          },
          "setting": {
            "type": [
              "string",
              "null"
            ]
          },
          "policies": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "restriction": {
            "type": "string"
          },
          "state": {
            "type": "string"
          },
          "required": {
            "type": "boolean"
          },
          "targets": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/TargetDecision"
            }
          },
          "filtersShareSheet": {
            "type": "boolean",
            "description": "Open-In/Share filtering: offer only the allowed targets."
          },
          "protectAsReceiver": {
            "type": "boolean",
            "description": "The data had no owner and becomes the receiving account's (All apps with incoming Org data)."
          },
          "account": {
            "type": [
              "string",
              "null"
            ],
            "description": "For a view of several accounts: the account whose answer decides."
          },
          "accounts": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "account",
                "action",
                "allowed"
              ],
              "description": "One account of the view: its `account` (null: no account) and its own answer's members.",
              "properties": {
                "account": {
                  "type": [
                    "string",
                    "null"
                  ]
                },
                "action": {
                  "$ref": "#/components/schemas/Action"
                },
                "allowed": {
                  "type": "boolean"
                }
              }
            },
            "description": "For a view of several accounts: each account's own answer."
          },
          "rule": {
            "type": "string",
            "description": "With explain=true: the rule of the contract that decided."
          },
          "basis": {
            "type": "string",
            "enum": [
              "documented",
              "inferred"
            ]
          },
          "source": {
            "type": "string"
          },
          "dataOwner": {
            "type": [
              "string",
              "null"
            ]
          },
          "ownerVerified": {
            "type": "boolean"
          },
          "decisionId": {
            "type": "string"
          },
          "revision": {
            "type": "string"
          },
          "eventId": {
            "$ref": "#/components/schemas/EventId"
          }
        },
        "description": "One answer of the `custody decide` contract. `reason` is left out with `reasons=false`; `rule`, `basis` and `source` come with `explain=true`; `decisionId` with decision auditing on; `revision` and `eventId` in the answer of POST /v1/decisions; `dataOwner` and `ownerVerified` in the answer of POST /v1/decisions/receive."
      },
      "Error": {
        "type": "object",
        "required": [
          "error",
          "code"
        ],
        "properties": {
          "error": {
            "type": "string",
            "description": "What is wrong, for a person."
          },
          "code": {
            "type": "string",
            "enum": [
              "invalid-query",
              "invalid-json",
              "invalid-parameter",
              "invalid-bundle-request",
              "empty-data",
              "platform-required",
              "malformed-request",
              "unexpected-body",
              "aborted",
              "unauthorized",
              "forbidden",
              "unknown-account",
              "not-found",
              "method-not-allowed",
              "body-timeout",
              "stale",
              "too-large",
              "unsupported-content-encoding",
              "expectation-failed",
              "invalid-bundle",
              "ambiguous-account",
              "refused",
              "invalid-arguments",
              "malformed-envelope",
              "unsupported-version",
              "decrypt-failed",
              "key-unavailable",
              "key-store-unavailable",
              "not-managed",
              "key-version-exists",
              "encrypt-failed",
              "io",
              "master-key",
              "headers-too-large",
              "internal",
              "not-implemented",
              "no-policy",
              "no-master-key",
              "state",
              "wipe",
              "outcome-unknown",
              "graph-not-configured",
              "graph-sync-busy",
              "graph-sync-failed"
            ],
            "description": "A stable code (docs/service.md lists each with its status): `invalid-query`, `invalid-json` (`line`, `column`), `invalid-parameter` (`parameter`), `invalid-bundle-request`, `empty-data`, `platform-required`, `malformed-request`, `unexpected-body` and `aborted` (400; `aborted` is logged for a client that left before its request was read, and reaches no one); `unauthorized` (401); `forbidden` (403, `scope`); `unknown-account`, `not-found` and `graph-not-configured` (404); `method-not-allowed` (405, `allow`); `body-timeout` (408); `stale` (409, `revision`, `eventId`) and `graph-sync-busy` (409); `too-large` (413, `limit`); `unsupported-content-encoding` (415); `expectation-failed` (417); `invalid-bundle` (422, `diagnostics`), `ambiguous-account`, `refused` and the protection codes (422); `headers-too-large` (431); `internal` (500); `not-implemented` (501); `graph-sync-failed` (502, `sync`); `no-policy`, `no-master-key`, `state`, `key-store-unavailable`, `wipe` and `outcome-unknown` (503, `revision`)."
          },
          "line": {
            "type": "integer"
          },
          "column": {
            "type": "integer"
          },
          "parameter": {
            "type": "string"
          },
          "scope": {
            "type": "string"
          },
          "revision": {
            "type": [
              "string",
              "null"
            ]
          },
          "eventId": {
            "$ref": "#/components/schemas/EventId"
          },
          "diagnostics": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "limit": {
            "type": "integer",
            "description": "The body limit in bytes (413)."
          },
          "allow": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "The methods the path takes (405), as in the `Allow` header."
          }
        },
        "additionalProperties": false
      },
      "Readiness": {
        "type": "object",
        "properties": {
          "status": {
            "type": "string",
            "enum": [
              "ready",
              "not ready"
            ]
          },
          "revision": {
            "type": [
              "string",
              "null"
            ]
          },
          "eventId": {
            "$ref": "#/components/schemas/EventId"
          },
          "state": {
            "type": "object",
            "description": "How current this replica is with its state (docs/fleet.md).",
            "properties": {
              "backend": {
                "type": "string",
                "enum": [
                  "sqlite",
                  "postgres"
                ]
              },
              "changeRevision": {
                "type": "integer",
                "description": "The last change of the state's change log applied here."
              },
              "newestKnown": {
                "type": "integer",
                "description": "The newest change this replica has heard of."
              },
              "listening": {
                "type": "boolean"
              },
              "stale": {
                "type": "boolean"
              },
              "lastContact": {
                "type": [
                  "string",
                  "null"
                ],
                "format": "date-time"
              },
              "divergence": {
                "type": [
                  "string",
                  "null"
                ],
                "description": "Why the state's newest bundle is not in force here although the state answers (it does not load here)."
              }
            },
            "required": [
              "backend",
              "changeRevision",
              "newestKnown",
              "listening",
              "stale",
              "lastContact",
              "divergence"
            ]
          },
          "problems": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "graph": {
            "type": "object",
            "description": "Present when the service syncs from Microsoft Graph. A failing sync leaves the service ready (the policy in force decides) and adds a warning.",
            "properties": {
              "status": {
                "type": "string",
                "enum": [
                  "pending",
                  "ok",
                  "failing"
                ]
              },
              "running": {
                "type": "boolean"
              },
              "consecutiveFailures": {
                "type": "integer"
              },
              "lastSuccessAt": {
                "type": [
                  "string",
                  "null"
                ],
                "format": "date-time"
              },
              "last": {
                "oneOf": [
                  {
                    "$ref": "#/components/schemas/PolicySync"
                  },
                  {
                    "type": "null"
                  }
                ]
              }
            },
            "required": [
              "status",
              "running",
              "consecutiveFailures",
              "lastSuccessAt",
              "last"
            ]
          },
          "warnings": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "What does not make the service unready but needs attention (a failing Graph sync)."
          }
        },
        "required": [
          "status",
          "revision",
          "eventId",
          "state",
          "problems",
          "warnings"
        ]
      },
      "PolicyReport": {
        "type": "object",
        "description": "An account's effective policy on one platform, as `custody policy show` prints it: each setting with its value, how it was resolved and the policies it comes from, and the conflicts between the policies reaching the account.",
        "required": [
          "account",
          "context",
          "managed",
          "accountAllowed",
          "policies",
          "settings",
          "managedApps",
          "precedence",
          "conflicts"
        ],
        "properties": {
          "account": {
            "type": "object",
            "required": [
              "oid",
              "upn",
              "inTenant",
              "groups"
            ],
            "properties": {
              "oid": {
                "type": [
                  "string",
                  "null"
                ]
              },
              "upn": {
                "type": [
                  "string",
                  "null"
                ]
              },
              "inTenant": {
                "type": "boolean"
              },
              "groups": {
                "type": "array",
                "items": {
                  "type": "string"
                }
              }
            }
          },
          "context": {
            "type": "object",
            "required": [
              "platform",
              "app",
              "managementLevel"
            ],
            "properties": {
              "platform": {
                "oneOf": [
                  {
                    "$ref": "#/components/schemas/Platform"
                  },
                  {
                    "type": "null"
                  }
                ]
              },
              "app": {
                "type": [
                  "string",
                  "null"
                ]
              },
              "managementLevel": {
                "oneOf": [
                  {
                    "$ref": "#/components/schemas/ManagementLevel"
                  },
                  {
                    "type": "null"
                  }
                ]
              }
            }
          },
          "managed": {
            "type": "boolean"
          },
          "accountAllowed": {
            "type": "object",
            "required": [
              "allowed",
              "reason"
            ],
            "properties": {
              "allowed": {
                "type": "boolean"
              },
              "reason": {
                "type": "string"
              }
            }
          },
          "policies": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "name",
                "id",
                "type",
                "location"
              ],
              "properties": {
                "name": {
                  "type": "string"
                },
                "id": {
                  "type": "string"
                },
                "type": {
                  "type": "string"
                },
                "location": {
                  "type": "string"
                }
              }
            }
          },
          "settings": {
            "type": "object",
            "additionalProperties": {
              "type": "object",
              "required": [
                "value",
                "resolution",
                "sources"
              ],
              "properties": {
                "value": {
                  "description": "The setting's value in force (a string, number, boolean, list or null)."
                },
                "resolution": {
                  "type": "string"
                },
                "sources": {
                  "type": "array",
                  "items": {
                    "type": "string"
                  }
                }
              }
            }
          },
          "managedApps": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "precedence": {
            "type": "string"
          },
          "conflicts": {
            "type": "object",
            "required": [
              "settings",
              "setAside"
            ],
            "properties": {
              "settings": {
                "type": "array",
                "items": {
                  "type": "object"
                }
              },
              "setAside": {
                "type": "array",
                "items": {
                  "type": "object"
                }
              }
            }
          }
        }
      },
      "ConfigurationReport": {
        "type": "object",
        "description": "The app configuration an account receives, as `custody config show` prints it.",
        "required": [
          "fullData",
          "policies",
          "keys"
        ],
        "properties": {
          "fullData": {
            "type": "array",
            "items": {
              "type": "object",
              "additionalProperties": {
                "type": "string"
              }
            },
            "description": "One object of keys and values per contributing policy (targeted ones, then the defaults)."
          },
          "policies": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "id",
                "displayName",
                "isDefault"
              ],
              "properties": {
                "id": {
                  "type": "string"
                },
                "displayName": {
                  "type": [
                    "string",
                    "null"
                  ]
                },
                "isDefault": {
                  "type": "boolean"
                }
              }
            }
          },
          "keys": {
            "type": "object",
            "additionalProperties": {
              "type": "object",
              "required": [
                "values",
                "any",
                "conflict"
              ],
              "properties": {
                "values": {
                  "type": "array",
                  "items": {
                    "type": "string"
                  }
                },
                "any": {
                  "type": [
                    "string",
                    "null"
                  ]
                },
                "conflict": {
                  "type": "boolean"
                }
              }
            }
          }
        }
      },
      "Bundle": {
        "type": "object",
        "properties": {
          "revision": {
            "type": "string"
          },
          "source": {
            "type": "string"
          },
          "appliedAt": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time"
          },
          "version": {
            "type": "integer"
          },
          "eventId": {
            "$ref": "#/components/schemas/EventId"
          },
          "files": {
            "type": "array",
            "items": {
              "type": "object",
              "properties": {
                "name": {
                  "type": "string"
                },
                "bytes": {
                  "type": "integer"
                }
              },
              "required": [
                "name",
                "bytes"
              ]
            }
          },
          "diagnostics": {
            "type": "array",
            "items": {
              "type": "string"
            }
          }
        },
        "required": [
          "revision",
          "source",
          "appliedAt",
          "version",
          "eventId",
          "files",
          "diagnostics"
        ]
      },
      "BundleRequest": {
        "type": "object",
        "required": [
          "files"
        ],
        "additionalProperties": false,
        "properties": {
          "files": {
            "type": "object",
            "propertyNames": {
              "maxLength": 255,
              "pattern": "^[^./\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069][^/\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]*\\.[jJ][sS][oO][nN]$"
            },
            "additionalProperties": {
              "type": "string"
            },
            "description": "Each file's name and text. A name ends in `.json` (in any case), is at most 255 bytes, does not start with `.`, and holds no `/`, control or bidirectional-formatting character (else 400 `invalid-bundle-request`)."
          },
          "allowEmpty": {
            "type": "boolean",
            "default": false,
            "description": "true: apply a bundle with no tenant.json and no protection policy (it manages no account), clearing the policy on purpose; without it such a bundle is a 422 `invalid-bundle`."
          }
        }
      },
      "Applied": {
        "type": "object",
        "properties": {
          "revision": {
            "type": "string"
          },
          "unchanged": {
            "type": "boolean"
          },
          "eventId": {
            "$ref": "#/components/schemas/EventId"
          },
          "events": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/EngineEventName"
            }
          }
        },
        "required": [
          "revision",
          "unchanged",
          "eventId",
          "events"
        ]
      },
      "EngineEventName": {
        "type": "string",
        "enum": [
          "allowedAccountsChanged",
          "policyChanged",
          "dataProtectionChanged",
          "appConfigurationChanged",
          "configurationDecodingFailed",
          "secretsChanged",
          "wipeRequired",
          "wipeCompleted",
          "bundleRejected",
          "bundleApplied",
          "policySynced"
        ],
        "description": "An event the engine publishes (and GET /v1/events streams)."
      },
      "StreamEventName": {
        "type": "string",
        "enum": [
          "allowedAccountsChanged",
          "policyChanged",
          "dataProtectionChanged",
          "appConfigurationChanged",
          "configurationDecodingFailed",
          "secretsChanged",
          "wipeRequired",
          "wipeCompleted",
          "bundleRejected",
          "bundleApplied",
          "policySynced",
          "ready",
          "reset",
          "unauthorized",
          "shutdown",
          "error"
        ],
        "description": "The `event:` of a Server-Sent Event of GET /v1/events: an engine event, `ready` (the switch to live events), `reset` (read the state afresh), `unauthorized` (the stream's token was revoked; the stream ends), `shutdown` (the service stops; the stream ends) or `error` (the event log cannot be read; the stream ends)."
      },
      "Wiped": {
        "type": "object",
        "properties": {
          "account": {
            "type": "string"
          },
          "owner": {
            "type": "string"
          },
          "identifiers": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "keyVersions": {
            "type": "integer"
          },
          "secrets": {
            "type": "integer"
          },
          "eventId": {
            "$ref": "#/components/schemas/EventId"
          }
        },
        "required": [
          "account",
          "owner",
          "identifiers",
          "keyVersions",
          "secrets",
          "eventId"
        ]
      },
      "Rotated": {
        "type": "object",
        "required": [
          "owner",
          "version"
        ],
        "properties": {
          "owner": {
            "type": "string"
          },
          "version": {
            "type": "integer"
          }
        }
      },
      "Binary": {
        "type": "string",
        "format": "binary",
        "description": "Raw bytes."
      },
      "PolicySync": {
        "type": "object",
        "description": "One sync of the policy from Microsoft Graph (custody serve --graph): what POST /v1/graph/sync answers, what /readyz reports as `graph.last`, and the body of a `policySynced` event (with `event`).",
        "properties": {
          "status": {
            "type": "string",
            "enum": [
              "applied",
              "unchanged",
              "failed"
            ],
            "description": "`applied`: the tenant's bundle is in force now; `unchanged`: it was already; `failed`: the policy in force stayed as it was."
          },
          "trigger": {
            "type": "string",
            "enum": [
              "start",
              "schedule",
              "request"
            ]
          },
          "source": {
            "type": "string",
            "description": "`graph:{tenant}@{host}`."
          },
          "revision": {
            "type": [
              "string",
              "null"
            ],
            "description": "The tenant's bundle revision; null when the sync failed."
          },
          "pages": {
            "type": "integer"
          },
          "requests": {
            "type": "integer",
            "description": "Requests sent to Graph and the token service, each try counted."
          },
          "throttled": {
            "type": "integer",
            "description": "Answers that were 429."
          },
          "durationMs": {
            "type": "integer"
          },
          "finishedAt": {
            "type": "string",
            "format": "date-time"
          },
          "error": {
            "type": [
              "string",
              "null"
            ],
            "description": "Why it failed, naming the request."
          }
        },
        "required": [
          "status",
          "trigger",
          "source",
          "revision",
          "pages",
          "requests",
          "throttled",
          "durationMs",
          "finishedAt",
          "error"
        ]
      }
    },
    "responses": {
      "BadRequest": {
        "description": "The request cannot be read: a query parameter, header or path segment that is unknown to the route, given twice or not a valid value (`invalid-parameter`, `parameter`); malformed JSON or a query (`invalid-query`, `invalid-json`: `line`, `column`); a bundle request that is not `{\"files\", \"allowEmpty\"}` (`invalid-bundle-request`); nothing to protect (`empty-data`); no platform named for a bundle whose policies are for iOS and Android (`platform-required`: add `platform`); a request that is not valid HTTP/1.1 (`malformed-request`, the connection is closed).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unauthorized": {
        "description": "No valid bearer token (`unauthorized`).",
        "headers": {
          "WWW-Authenticate": {
            "schema": {
              "type": "string"
            },
            "description": "`Bearer realm=\"custody\"`.",
            "required": true
          }
        },
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Forbidden": {
        "description": "The token lacks the route's scope (`forbidden`, `scope`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "NotFound": {
        "description": "An account the installation does not know (`unknown-account`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "NoSuchRoute": {
        "description": "A path that is no route (`not-found`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "MethodNotAllowed": {
        "description": "A method the path does not take (`method-not-allowed`, `allow`): not an operation of its own, it is what every path answers for the methods it does not list.",
        "headers": {
          "Allow": {
            "schema": {
              "type": "string"
            },
            "description": "The methods the path takes, such as `GET, HEAD`.",
            "required": true
          }
        },
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "BodyTimeout": {
        "description": "The body did not arrive within the body deadline (`body-timeout`); the connection is closed.",
        "headers": {
          "Connection": {
            "schema": {
              "type": "string",
              "const": "close"
            },
            "description": "The connection is closed after the answer."
          }
        },
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Stale": {
        "description": "The service is behind `Custody-Min-Revision` or `Custody-Min-Event-Id` (`stale`); the body has its `revision` and `eventId`.",
        "headers": {
          "Custody-Revision": {
            "schema": {
              "type": "string"
            },
            "description": "The bundle revision (content hash) the answer was decided at.",
            "required": true
          },
          "Custody-Event-Id": {
            "schema": {
              "$ref": "#/components/schemas/EventId"
            },
            "description": "The newest event id the service knew when it decided.",
            "required": true
          }
        },
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "TooLarge": {
        "description": "The body is larger than the service accepts (`too-large`, `limit`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "UnsupportedContentEncoding": {
        "description": "The body is in a content coding (`unsupported-content-encoding`): bodies are read as sent; the connection is closed.",
        "headers": {
          "Accept-Encoding": {
            "schema": {
              "type": "string",
              "const": "identity"
            }
          },
          "Connection": {
            "schema": {
              "type": "string",
              "const": "close"
            },
            "description": "The connection is closed after the answer."
          }
        },
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "ExpectationFailed": {
        "description": "An `Expect` other than `100-continue` (`expectation-failed`); the connection is closed.",
        "headers": {
          "Connection": {
            "schema": {
              "type": "string",
              "const": "close"
            },
            "description": "The connection is closed after the answer."
          }
        },
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unprocessable": {
        "description": "Refused: an invalid bundle, or one that knows nothing without `allowEmpty` (`invalid-bundle`, `diagnostics`), an ambiguous account (`ambiguous-account`), data of a managed account tagged without encryption (`refused`), a protection failure (`invalid-arguments`, `malformed-envelope`, `unsupported-version`, `decrypt-failed`, `key-unavailable`, `not-managed`, `key-version-exists`, `encrypt-failed`, `io`, `master-key`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "HeadersTooLarge": {
        "description": "The request line and header fields are over 16 KiB, or more than 100 fields (`headers-too-large`); the connection is closed.",
        "headers": {
          "Connection": {
            "schema": {
              "type": "string",
              "const": "close"
            },
            "description": "The connection is closed after the answer."
          }
        },
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "NotImplemented": {
        "description": "A method the service does not know, on any path (`not-implemented`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unavailable": {
        "description": "No bundle is in force (`no-policy`), no master key (`no-master-key`), the state cannot be reached (`state`, or `key-store-unavailable` when account keys are needed), a wipe could not be completed (`wipe`), or the state did not confirm a bundle's commit and could not be read back (`outcome-unknown`, with the bundle's `revision`: it may be in force; see GET /v1/bundle). Never an allow.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      }
    }
  }
}

"""#
}

extension CustodyServerConfiguration {
    /// The OpenAPI document the service serves at `GET /openapi.json`.
    public static var openAPIDocument: [UInt8] { OpenAPIDocument.bytes }
}
