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
    "description": "Decisions, policy, changes and protection for services enforcing data-transfer policy. Every /v1 route needs `Authorization: Bearer custody_\u2026` with its scope; errors are JSON `{\"error\", \"code\", ...}`."
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
                  }
                }
              }
            }
          }
        }
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
        }
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
          }
        }
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
          }
        }
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
        "description": "The body is one query, the JSON of a `custody decide` line. The answer is that line's decision JSON, with `revision` and `eventId` (and `decisionId` when decision auditing is on; the audit entry is written before the answer). Needs a token with the `decide` scope (`admin` grants every scope).",
        "parameters": [
          {
            "name": "platform",
            "in": "query",
            "schema": {
              "type": "string",
              "enum": [
                "ios",
                "android"
              ]
            },
            "description": "Evaluate for this platform (default: the service's context)."
          },
          {
            "name": "app",
            "in": "query",
            "schema": {
              "type": "string",
              "maxLength": 256
            },
            "description": "The evaluating app's bundle or package id."
          },
          {
            "name": "managementLevel",
            "in": "query",
            "schema": {
              "type": "string"
            },
            "description": "The device's management state, matched against targetedAppManagementLevels."
          },
          {
            "name": "reasons",
            "in": "query",
            "schema": {
              "type": "boolean",
              "default": true
            },
            "description": "false: answers carry setting and policies but no reason text."
          },
          {
            "name": "strictAccounts",
            "in": "query",
            "schema": {
              "type": "boolean",
              "default": false
            },
            "description": "true: a query naming an account the tenant does not know is an error."
          },
          {
            "name": "explain",
            "in": "query",
            "schema": {
              "type": "boolean",
              "default": false
            },
            "description": "true: each answer adds the rule behind it: `rule`, `basis` (documented or inferred) and `source`."
          },
          {
            "name": "Custody-Min-Revision",
            "in": "header",
            "schema": {
              "type": "string",
              "pattern": "^[0-9a-f]{1,128}$"
            },
            "description": "Refuse (409) unless this revision, or one applied after it, is in force."
          },
          {
            "name": "Custody-Min-Event-Id",
            "in": "header",
            "schema": {
              "type": "integer",
              "minimum": 0
            },
            "description": "Refuse (409) unless the service has seen events up to this id."
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/Query"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The decision.",
            "headers": {
              "Custody-Revision": {
                "schema": {
                  "type": "string"
                },
                "description": "The bundle revision (content hash) the answer was decided at."
              },
              "Custody-Event-Id": {
                "schema": {
                  "type": "integer"
                },
                "description": "The newest event id the service knew when it decided."
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
          "409": {
            "$ref": "#/components/responses/Stale"
          },
          "413": {
            "$ref": "#/components/responses/TooLarge"
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
        "description": "JSON Lines in, one answer per line out, in order, streamed as they are decided. Each line is answered on its own: a bad line gets an error object (`{\"error\": \"line N, column C: ...\", \"line\": N}`) in its place. The whole batch is decided on one snapshot, whose revision and event id are in the response headers. Past the batch limit (10,000 queries by default), one error line says so and the rest is not answered; a line longer than the line limit (64 KiB) gets an error line. Needs a token with the `decide` scope (`admin` grants every scope).",
        "parameters": [
          {
            "name": "platform",
            "in": "query",
            "schema": {
              "type": "string",
              "enum": [
                "ios",
                "android"
              ]
            },
            "description": "Evaluate for this platform (default: the service's context)."
          },
          {
            "name": "app",
            "in": "query",
            "schema": {
              "type": "string",
              "maxLength": 256
            },
            "description": "The evaluating app's bundle or package id."
          },
          {
            "name": "managementLevel",
            "in": "query",
            "schema": {
              "type": "string"
            },
            "description": "The device's management state, matched against targetedAppManagementLevels."
          },
          {
            "name": "reasons",
            "in": "query",
            "schema": {
              "type": "boolean",
              "default": true
            },
            "description": "false: answers carry setting and policies but no reason text."
          },
          {
            "name": "strictAccounts",
            "in": "query",
            "schema": {
              "type": "boolean",
              "default": false
            },
            "description": "true: a query naming an account the tenant does not know is an error."
          },
          {
            "name": "explain",
            "in": "query",
            "schema": {
              "type": "boolean",
              "default": false
            },
            "description": "true: each answer adds the rule behind it: `rule`, `basis` (documented or inferred) and `source`."
          },
          {
            "name": "Custody-Min-Revision",
            "in": "header",
            "schema": {
              "type": "string",
              "pattern": "^[0-9a-f]{1,128}$"
            },
            "description": "Refuse (409) unless this revision, or one applied after it, is in force."
          },
          {
            "name": "Custody-Min-Event-Id",
            "in": "header",
            "schema": {
              "type": "integer",
              "minimum": 0
            },
            "description": "Refuse (409) unless the service has seen events up to this id."
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/x-ndjson": {
              "schema": {
                "type": "string"
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
                "description": "The bundle revision (content hash) the answer was decided at."
              },
              "Custody-Event-Id": {
                "schema": {
                  "type": "integer"
                },
                "description": "The newest event id the service knew when it decided."
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
          "409": {
            "$ref": "#/components/responses/Stale"
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
        "description": "The body is the shared item: an envelope, its first bytes (the header is enough; at most 4 KiB are read), or untagged data. The owner is read from the envelope, as Intune's canReceiveSharedFile: does, and the receive query is decided. An encrypted envelope's owner is verified (its data-key wrap must open under that owner's key): a changed header, or an owner whose keys were wiped, is a 422. An unencrypted envelope's owner is a claim: the item is allowed only when it would be both as that owner's data and as untagged data. Needs a token with the `decide` scope (`admin` grants every scope).",
        "parameters": [
          {
            "name": "receiver",
            "in": "query",
            "schema": {
              "type": "string",
              "maxLength": 1024
            },
            "description": "The receiving account: a UPN, or an OID in GUID form (none: no account)."
          },
          {
            "name": "platform",
            "in": "query",
            "schema": {
              "type": "string",
              "enum": [
                "ios",
                "android"
              ]
            },
            "description": "Evaluate for this platform (default: the service's context)."
          },
          {
            "name": "app",
            "in": "query",
            "schema": {
              "type": "string",
              "maxLength": 256
            },
            "description": "The evaluating app's bundle or package id."
          },
          {
            "name": "managementLevel",
            "in": "query",
            "schema": {
              "type": "string"
            },
            "description": "The device's management state, matched against targetedAppManagementLevels."
          },
          {
            "name": "Custody-Min-Revision",
            "in": "header",
            "schema": {
              "type": "string",
              "pattern": "^[0-9a-f]{1,128}$"
            },
            "description": "Refuse (409) unless this revision, or one applied after it, is in force."
          },
          {
            "name": "Custody-Min-Event-Id",
            "in": "header",
            "schema": {
              "type": "integer",
              "minimum": 0
            },
            "description": "Refuse (409) unless the service has seen events up to this id."
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/octet-stream": {
              "schema": {
                "type": "string",
                "format": "binary"
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
                "description": "The bundle revision (content hash) the answer was decided at."
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
          "409": {
            "$ref": "#/components/responses/Stale"
          },
          "422": {
            "$ref": "#/components/responses/Unprocessable"
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
        "description": "Needs a token with the `read` scope (`admin` grants every scope).",
        "parameters": [
          {
            "name": "account",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string",
              "maxLength": 1024
            },
            "description": "A UPN, or an OID in GUID form."
          },
          {
            "name": "platform",
            "in": "query",
            "schema": {
              "type": "string",
              "enum": [
                "ios",
                "android"
              ]
            },
            "description": "Evaluate for this platform (default: the service's context)."
          },
          {
            "name": "app",
            "in": "query",
            "schema": {
              "type": "string",
              "maxLength": 256
            },
            "description": "The evaluating app's bundle or package id."
          },
          {
            "name": "managementLevel",
            "in": "query",
            "schema": {
              "type": "string"
            },
            "description": "The device's management state, matched against targetedAppManagementLevels."
          },
          {
            "name": "Custody-Min-Revision",
            "in": "header",
            "schema": {
              "type": "string",
              "pattern": "^[0-9a-f]{1,128}$"
            },
            "description": "Refuse (409) unless this revision, or one applied after it, is in force."
          },
          {
            "name": "Custody-Min-Event-Id",
            "in": "header",
            "schema": {
              "type": "integer",
              "minimum": 0
            },
            "description": "Refuse (409) unless the service has seen events up to this id."
          }
        ],
        "responses": {
          "200": {
            "description": "As `custody policy show`.",
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
          "422": {
            "$ref": "#/components/responses/Unprocessable"
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
        "description": "Needs a token with the `read` scope (`admin` grants every scope).",
        "parameters": [
          {
            "name": "account",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string",
              "maxLength": 1024
            },
            "description": "A UPN, or an OID in GUID form."
          },
          {
            "name": "platform",
            "in": "query",
            "schema": {
              "type": "string",
              "enum": [
                "ios",
                "android"
              ]
            },
            "description": "Evaluate for this platform (default: the service's context)."
          },
          {
            "name": "app",
            "in": "query",
            "schema": {
              "type": "string",
              "maxLength": 256
            },
            "description": "The evaluating app's bundle or package id."
          },
          {
            "name": "managementLevel",
            "in": "query",
            "schema": {
              "type": "string"
            },
            "description": "The device's management state, matched against targetedAppManagementLevels."
          },
          {
            "name": "Custody-Min-Revision",
            "in": "header",
            "schema": {
              "type": "string",
              "pattern": "^[0-9a-f]{1,128}$"
            },
            "description": "Refuse (409) unless this revision, or one applied after it, is in force."
          },
          {
            "name": "Custody-Min-Event-Id",
            "in": "header",
            "schema": {
              "type": "integer",
              "minimum": 0
            },
            "description": "Refuse (409) unless the service has seen events up to this id."
          }
        ],
        "responses": {
          "200": {
            "description": "As `custody config show`: fullData, policies, keys; `null` for an unmanaged account.",
            "content": {
              "application/json": {
                "schema": {
                  "type": [
                    "object",
                    "null"
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
          "422": {
            "$ref": "#/components/responses/Unprocessable"
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
        "description": "Needs a token with the `read` scope (`admin` grants every scope).",
        "responses": {
          "200": {
            "description": "Its revision, source, files and warnings.",
            "headers": {
              "ETag": {
                "schema": {
                  "type": "string"
                }
              },
              "Custody-Revision": {
                "schema": {
                  "type": "string"
                },
                "description": "The bundle revision (content hash) the answer was decided at."
              },
              "Custody-Event-Id": {
                "schema": {
                  "type": "integer"
                },
                "description": "The newest event id the service knew when it decided."
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Bundle"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "403": {
            "$ref": "#/components/responses/Forbidden"
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
        "description": "Validated and resolved completely, stored with its revision, then put in force, as `custody apply` does; one that does not load is refused (422, with its located diagnostics) and recorded as rejected, and the policy in force stays. Needs a token with the `admin` scope (`admin` grants every scope).",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "files"
                ],
                "additionalProperties": false,
                "properties": {
                  "files": {
                    "type": "object",
                    "additionalProperties": {
                      "type": "string"
                    },
                    "description": "Each file's name (`tenant.json`, `<name>.json`) and text."
                  }
                }
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
          "422": {
            "$ref": "#/components/responses/Unprocessable"
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
        "description": "Each event has its id in the state's event log (`id:`), its name (`event:`) and its JSON (`data:`, as `custody watch` prints it). `Last-Event-ID` resumes after that event from the log; when the log no longer holds every event after it, a `reset` event says so. A `ready` event marks the switch to live events; a comment line is sent as heartbeat. A stream is a cursor into the log, not a queue: however far a client falls behind, the service holds nothing more for it, and it is sent what it missed at its own pace; on shutdown every stream ends with a `shutdown` event. Needs a token with the `events` scope (`admin` grants every scope).",
        "parameters": [
          {
            "name": "Last-Event-ID",
            "in": "header",
            "schema": {
              "type": "integer",
              "minimum": 0
            }
          },
          {
            "name": "lastEventId",
            "in": "query",
            "schema": {
              "type": "integer",
              "minimum": 0
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The event stream.",
            "content": {
              "text/event-stream": {
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
        "description": "Raw bytes in, the envelope out: encrypted unless the owner's policy in force says it need not be. An owner the policy does not know needs `unmanaged=true` (tagged only) or `encrypt=true`; `unmanaged=true` is refused for an account whose policy requires encryption. Needs a token with the `protect` scope (`admin` grants every scope).",
        "parameters": [
          {
            "name": "owner",
            "in": "query",
            "required": true,
            "schema": {
              "type": "string",
              "maxLength": 1024
            }
          },
          {
            "name": "encrypt",
            "in": "query",
            "schema": {
              "type": "boolean"
            }
          },
          {
            "name": "unmanaged",
            "in": "query",
            "schema": {
              "type": "boolean"
            }
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/octet-stream": {
              "schema": {
                "type": "string",
                "contentEncoding": "binary"
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
                }
              },
              "Custody-Encrypted": {
                "schema": {
                  "type": "boolean"
                }
              }
            },
            "content": {
              "application/octet-stream": {
                "schema": {
                  "type": "string",
                  "contentEncoding": "binary"
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
          "422": {
            "$ref": "#/components/responses/Unprocessable"
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
        "description": "An envelope in, its plaintext out, whole or not at all: anything that is not an envelope, was changed or truncated, or whose owner was wiped is a 422 whose `code` names why (`decrypt-failed`, `key-unavailable`, `malformed-envelope`, `invalid-arguments`). Needs a token with the `protect` scope (`admin` grants every scope).",
        "requestBody": {
          "required": true,
          "content": {
            "application/octet-stream": {
              "schema": {
                "type": "string",
                "contentEncoding": "binary"
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
                }
              }
            },
            "content": {
              "application/octet-stream": {
                "schema": {
                  "type": "string",
                  "contentEncoding": "binary"
                }
              }
            }
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
          "422": {
            "$ref": "#/components/responses/Unprocessable"
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
        "description": "As `custody wipe`: the account's keys under every identifier it has or had in this state, its secrets and check-ins, in one transaction. An account the installation cannot resolve is a 404; nothing is reported wiped that was not. Needs a token with the `admin` scope (`admin` grants every scope).",
        "parameters": [
          {
            "name": "account",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string",
              "maxLength": 1024
            },
            "description": "A UPN, or an OID in GUID form."
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
          "422": {
            "$ref": "#/components/responses/Unprocessable"
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
        "description": "Needs a token with the `admin` scope (`admin` grants every scope).",
        "parameters": [
          {
            "name": "account",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string",
              "maxLength": 1024
            },
            "description": "A UPN, or an OID in GUID form."
          }
        ],
        "responses": {
          "200": {
            "description": "The new version.",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "owner": {
                      "type": "string"
                    },
                    "version": {
                      "type": "integer"
                    }
                  }
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
          "422": {
            "$ref": "#/components/responses/Unprocessable"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
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
    "schemas": {
      "Account": {
        "oneOf": [
          {
            "type": "string"
          },
          {
            "type": "object",
            "additionalProperties": false,
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
              }
            }
          },
          {
            "type": "null"
          }
        ]
      },
      "Query": {
        "type": "object",
        "required": [
          "action"
        ],
        "description": "One `custody decide` query; docs/decisions.md lists every action and its fields.",
        "properties": {
          "action": {
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
          "owner": {
            "$ref": "#/components/schemas/Account"
          },
          "owners": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Account"
            },
            "minItems": 1,
            "maxItems": 64,
            "description": "A view of several accounts (share, copyOut, pasteIn): decided with the most restrictive of their answers."
          },
          "accounts": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Account"
            },
            "minItems": 1,
            "maxItems": 64,
            "description": "A view of several accounts (per-account actions): decided with the most restrictive of their answers."
          },
          "receiver": {
            "$ref": "#/components/schemas/Account"
          },
          "account": {
            "$ref": "#/components/schemas/Account"
          },
          "locationAccount": {
            "$ref": "#/components/schemas/Account"
          },
          "dataOwner": {
            "$ref": "#/components/schemas/Account"
          },
          "location": {
            "type": "string"
          },
          "targets": {
            "type": "array",
            "items": {
              "type": "string"
            }
          },
          "destinationManaged": {
            "type": "boolean"
          },
          "sourceManaged": {
            "type": "boolean"
          },
          "length": {
            "type": [
              "integer",
              "null"
            ]
          },
          "offlineFor": {
            "type": "string"
          },
          "lastCheckIn": {
            "type": "string"
          },
          "now": {
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
              "type": "object"
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
              "type": "object"
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
            "type": "integer"
          }
        }
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
            "description": "A stable code."
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
            "type": "integer"
          },
          "diagnostics": {
            "type": "array",
            "items": {
              "type": "string"
            }
          }
        }
      },
      "Readiness": {
        "type": "object",
        "properties": {
          "status": {
            "type": "string"
          },
          "revision": {
            "type": [
              "string",
              "null"
            ]
          },
          "eventId": {
            "type": "integer"
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
            }
          },
          "problems": {
            "type": "array",
            "items": {
              "type": "string"
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
            ]
          },
          "version": {
            "type": "integer"
          },
          "eventId": {
            "type": "integer"
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
              }
            }
          },
          "diagnostics": {
            "type": "array",
            "items": {
              "type": "string"
            }
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
            "type": "integer"
          },
          "events": {
            "type": "array",
            "items": {
              "type": "string"
            }
          }
        }
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
            "type": "integer"
          }
        }
      }
    },
    "responses": {
      "BadRequest": {
        "description": "The request cannot be read: malformed JSON or query (`line`, `column`), a bad parameter (`parameter`); or no platform is named for a bundle whose policies are for iOS and Android (`platform-required`: add `platform`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unauthorized": {
        "description": "No valid bearer token.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Forbidden": {
        "description": "The token lacks the scope (`scope`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "NotFound": {
        "description": "An account the installation does not know.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Stale": {
        "description": "The service is behind `Custody-Min-Revision` or `Custody-Min-Event-Id`; the body has its `revision` and `eventId`.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "TooLarge": {
        "description": "The body is larger than the service accepts.",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unprocessable": {
        "description": "Refused: an invalid bundle (`diagnostics`), an ambiguous account, a protection failure (`code`).",
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        }
      },
      "Unavailable": {
        "description": "No bundle is in force (`no-policy`), no master key, or the state cannot be read. Never an allow.",
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
