"""Prose entity extraction: files, symbols, errors, commits, packages, env vars, commands, URLs.

This is the only module that imports spaCy, and it imports it lazily (``code_terms`` and the
import itself never load it). The pipeline is ``spacy.blank("en")`` with a tokenizer whose
``token_match`` keeps paths, dotted names, ``_`` identifiers, pins, ``$VARS`` and flags whole; it
is built once per process (and rebuilt every ``RESET_AFTER_DOCS`` docs to bound its vocabulary).
Code-like kinds come from gated regular expressions over the raw text, so offsets are exact;
overlapping candidates are resolved per cluster (a command may contain files, packages, env vars;
a URL may contain a full SHA; otherwise the longer span wins, then kind priority). Concepts come
from runs of 1-3 content tokens of the spaCy doc (noun chunks when ``en_core_web_sm`` is
installed); with ``concepts=False`` spaCy is not used at all. Texts longer than ``CHUNK_CHARS``
are processed in line-aligned chunks, and texts longer than ``LARGE_TEXT`` get concepts from the
same rule on regex words instead of a spaCy doc, which keeps 1 MB inputs to a few seconds.

Conventions (the labelled set in ``tests/data/entities.jsonl`` follows the same ones):

* ``text`` never includes surrounding backticks or quotes, nor the ``$ `` of a prompt line.
* file: paths with a known extension, known extensionless names (``Makefile``), dotfiles,
  directories written with a trailing ``/``, absolute/home/relative (``./``) paths and paths with
  two or more slashes. A ``:42`` / ``:4:5`` / ``(4,5)`` location is not part of ``text``: ``detail``
  keeps it (``4:5``); ``norm`` drops a leading ``./`` and trailing ``/``. Dates are never files.
* symbol: calls (``parse_config()`` keeps empty parentheses in ``text``; ``f(x)`` gives ``f``),
  dotted / ``::`` names, CamelCase with two or more humps and a code cue (backticks, parens,
  ``class``/``method``/... words; without one it is a *bare* name, given only with ``bare=True``
  and linked only if the code index knows it), camelCase, names with ``_``,
  identifiers in backticks, ``.attr`` references (dot not included), keyword arguments set to
  ``True``/``False``/``None``, the function of a traceback frame, Elixir/Erlang ``Mod.fun/2`` and
  names quoted by compilers (``Type of "x"``, ``variable "opts"``, PHP's ``Class 'App'``). Not symbols: products and their versions
  (``AppleWebKit/537.36``, ``uWSGI``), abbreviated logger names, compose container prefixes,
  XML tags, markdown emphasis, locales, keywords, one-letter names. ``norm`` drops ``()`` and a
  leading ``self.`` / ``cls.`` / ``this.`` (``self.foo`` and ``foo`` link to the same symbol).
* error: exception classes (``*Error``, ``*Exception``, ``*Warning``, builtins, a CamelCase name
  after ``raise``/``throw``/``catch`` or before ``exception``, the name heading a traceback line),
  errno names, compiler/linter codes in context, ``ORA-``, ``CVE-``, ``GHSA-``, HTTP 4xx/5xx,
  exit codes, signals, ``Errno N``. ``norm`` is e.g. ``KeyError``, ``HTTP 503``, ``exit 137``;
  ``detail`` holds the message that follows ``Name:`` on the same line.
* commit: 7–40 lowercase hex with a digit and a letter, standing alone (not in UUIDs, hyphenated
  names, ``0x`` literals or after hash/digest/image/container words); inside URLs only full
  40-hex SHAs or SHAs after ``/commit/``.
* package: pins (``numpy==1.26``, ``react@18``), install/import/"No module named" contexts,
  well-known package names, and ambiguous names (``requests``) only with a version or a
  ``library``/``package`` word, npm scoped names anywhere, Maven ``group:artifact:version``, a
  hyphenated name before a version, ``upgrade X to N``, ``composer require``/``mix deps.*`` args.
  ``norm`` is the lowercase name (PEP 503 style), ``detail`` the version.
* envvar: ``$X``, ``${X}``, ``X=value``, ``os.environ``/``getenv``/``process.env`` accessors,
  env-var context words, well-known names and UPPER_SNAKE names with env-like affixes. Other
  UPPER_SNAKE names are symbols (constants).
* command: ``$ `` prompt lines, lines that are nothing but a command (after a prompt — ``$``,
  ``#``, ``%``, ``user@host:dir$`` — a list number, ``> `` or CI's ``Run ``, or started by a path
  to a program), backticked text starting with a known executable or an unknown tool and a
  common verb, Docker ``RUN`` lines, quoted ``sh -c`` strings, and prose commands (executable +
  known subcommand, flag, path-like word or common verb + args). Chains
  (``&&``, ``||``, ``;``, ``|``) are split into one command each; ``text`` keeps every argument.
  ``norm`` is the executable plus its subcommand for tools with subcommands (``git rebase``,
  ``docker compose``, ``npm run build`` keeps the script, ``python -m pytest`` keeps the module),
  otherwise the executable.
* url: scheme URLs, ``git@host:path``, ``host:port`` (a bare IP address is not one), bare domains with a known
  TLD, ``port 5432``, ``:8000`` and route paths after an HTTP method or ``url:``. Loopback hosts
  normalise to ``localhost:PORT``.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphmem.extract import vocabulary as _vocab

__all__ = ["KINDS", "Mention", "code_terms", "extract", "extract_many"]

KINDS = ("file", "symbol", "error", "commit", "package", "envvar", "command", "url", "concept")

CHUNK_CHARS = 50_000
LARGE_TEXT = 200_000
MAX_MENTION_CHARS = 1_000
MAX_WORD_CHARS = 40
RESET_AFTER_DOCS = 200_000
_PRIORITY = {
    "error": 8,
    "envvar": 7,
    "package": 6,
    "file": 5,
    "url": 4,
    "commit": 3,
    "weakpackage": 2,
    "symbol": 1,
}


@dataclass(frozen=True)
class Mention:
    """One entity mention: kind, exact surface text, offsets, link key and optional detail.

    ``bare``: a CamelCase symbol known by its shape alone, with no code cue around it; product
    names look the same, so linking keeps it only if the code index knows it (once there is one).
    """

    kind: str
    text: str
    start: int
    end: int
    norm: str
    detail: str = ""
    bare: bool = False


@dataclass
class _Cand:
    """A candidate mention before overlap resolution."""

    kind: str
    start: int
    end: int
    norm: str
    detail: str = ""
    weak: bool = False

    @property
    def rank(self) -> int:
        """Priority among kinds for identical or overlapping spans."""
        return _PRIORITY["weakpackage" if self.weak and self.kind == "package" else self.kind]


def _words(s: str) -> frozenset[str]:
    """Whitespace-separated words of a literal as a frozenset."""
    return frozenset(s.split())


# ---------------------------------------------------------------------------------------------
# Lexicons
# ---------------------------------------------------------------------------------------------

FILE_EXTS = _words(
    """py pyi pyx pxd ipynb js jsx ts tsx mjs cjs mts cts vue svelte astro json jsonl json5
    yaml yml toml ini cfg conf env txt md mdx rst adoc html htm css scss sass less sh bash zsh
    fish ps1 bat cmd go mod sum rs java kt kts scala groovy gradle c h cc cpp cxx hpp hh cs fs
    rb erb php pl pm swift m mm r jl lua dart ex exs erl hrl elm clj cljs hs ml sql graphql gql
    proto lock log csv tsv xml xsd xsl svg png jpg jpeg gif webp ico pdf tf tfvars hcl nix
    dockerfile mk cmake make whl egg tar gz tgz bz2 xz zip jar war so dll dylib a o pem crt cer
    csr p12 db sqlite sqlite3 parquet arrow feather pkl pickle npy npz pt pth onnx bin safetensors
    wasm map snap patch diff tmpl tpl j2 jinja jinja2 ejs hbs pug cypher cql spec properties
    plist service timer socket desktop rules editorconfig gitignore dockerignore npmrc nvmrc
    example sample local dist bak orig swp phar R eex heex leex"""
)
_AMBIG_EXTS = _words("socket service timer rules local dist sample example spec map snap a o m r")
EXTENSIONLESS_FILES = _words(
    """Makefile makefile GNUmakefile Dockerfile Containerfile Procfile Gemfile Rakefile
    Jenkinsfile Vagrantfile Brewfile Pipfile Justfile justfile Caddyfile Podfile Fastfile
    Guardfile Berksfile Capfile Snakefile Tiltfile Earthfile LICENSE LICENCE COPYING NOTICE
    README CHANGELOG CHANGES AUTHORS CONTRIBUTORS CODEOWNERS MANIFEST.in OWNERS VERSION"""
)
DOTFILES = _words(
    """.env .envrc .gitignore .gitattributes .gitmodules .gitconfig .gitkeep .mailmap
    .dockerignore .npmrc .nvmrc .yarnrc .npmignore .bashrc .bash_profile .zshrc .zprofile
    .profile .vimrc .tmux.conf .editorconfig .prettierrc .prettierignore .eslintrc .eslintignore
    .babelrc .stylelintrc .pylintrc .flake8 .coveragerc .python-version .ruby-version
    .node-version .tool-versions .netrc .pypirc .pgpass .htaccess .htpasswd .clang-format
    .pre-commit-config.yaml .travis.yml .gitlab-ci.yml .github .vscode .idea .venv .git .ssh
    .cache .config .terraform .mypy_cache .pytest_cache .ruff_cache .tox .nox .next .nuxt"""
)
DIR_HINTS = _words(
    """src lib libs tests test spec docs doc app apps bin scripts script config configs pkg
    cmd internal dist build vendor examples example tools node_modules public static assets
    migrations fixtures templates include etc usr var tmp home opt packages modules services
    web server client frontend backend infra charts k8s .github .venv venv"""
)
ATTR_OWNERS = _words(
    """self cls this super console process window document os sys r resp response res req
    request ctx obj logger json np pd math Math JSON module exports"""
)
JS_BRANDS = _words(
    """Node.js Next.js Vue.js Nuxt.js Express.js React.js Angular.js Three.js D3.js Chart.js
    Ember.js Backbone.js Socket.io Socket.IO Deno.js Nest.js Solid.js Alpine.js Knockout.js
    node.js next.js vue.js nuxt.js express.js react.js three.js d3.js chart.js"""
)
NOT_DOTTED = _words("e.g i.e a.k.a etc vs cf viz approx py.test U.S U.K P.S N.B")
TLDS = _words(
    """com org net io dev gl ly co ai gov edu me xyz cloud us uk de fr jp cn ru eu tech site
    page info biz sh internal example local test invalid localhost"""
)
_WEAK_TLDS = _words("info sh internal example local test invalid localhost me")

BRANDS = _words(
    """GitHub GitLab BitBucket Bitbucket JavaScript TypeScript CoffeeScript PostgreSQL MySQL
    MariaDB MongoDB DynamoDB CosmosDB DuckDB LanceDB ChromaDB RocksDB LevelDB InfluxDB SQLite
    NoSQL GraphQL OAuth OAuth1 OAuth2 PyPI PyPy CPython IronPython MicroPython PyCharm IntelliJ
    VSCode VSCodium MacOS macOS iOS iPadOS watchOS tvOS iPhone iPad iPod iCloud iTerm iTerm2
    eBay PayPal YouTube LinkedIn WordPress StackOverflow DevOps GitOps MLOps SaaS PaaS IaaS
    OpenAI ChatGPT OpenSSL LibreSSL BoringSSL OpenSSH OpenAPI AsyncAPI HyperText MiniLM
    RoBERTa DistilBERT LoRA QLoRA HuggingFace LangChain LlamaIndex CodeQL SonarQube VMware
    VirtualBox FreeBSD OpenBSD NetBSD CentOS RedHat OpenShift SharePoint OneDrive DropBox
    PlayStation SpaceX LaTeX BibTeX WebSocket WebSockets WebAssembly WebKit WebGL WebRTC
    JetBrains GoLand RubyMine XCode DeepMind PowerShell CloudFlare Cloudflare ClickHouse
    RabbitMQ ZeroMQ CircleCI TravisCI AppVeyor DockerHub BigQuery RedShift Redshift SnowFlake
    Snowflake DataBricks Databricks DataDog Datadog NewRelic PagerDuty OpenTelemetry OTel
    WireGuard TailScale ZeroTier PuTTY WinSCP FileZilla IPv4 IPv6 HTTPie NuGet CocoaPods
    HomeBrew MkDocs ReadTheDocs NestJS NextJS NuxtJS NodeJS VueJS ReactJS AngularJS SvelteKit
    TailwindCSS PostCSS KuzuDB LadybugDB FalkorDB ArangoDB JanusGraph TigerGraph GraphRAG
    MemGPT AutoGen CrewAI McDonald McKinsey BlackBerry WiFi PhD GHz MHz KiB MiB GiB TiB
    JUnit TestNG PHPUnit ESLint TSLint DevTools ChromeOS ArchLinux OpenBLAS CUDA cuDNN
    TensorRT OpenCL OpenGL DirectX LibreOffice OpenOffice BuySellAds GitKraken SourceTree
    GitHubActions AzureDevOps CodeBuild CloudWatch CloudFormation EKS AppEngine FireBase
    PubSub BigTable SpringBoot ASPNET DotNet OpenJDK GraalVM JRuby RubyGems CPAN PyTest PyDev
    NetBeans JupyterLab AppKit UIKit SwiftUI WatchKit CoreData CloudStack OpenStack DevStack
    LoopBack DigitalOcean MacBook AppleWebKit ElasticSearch OpenSearch DataGrip PhpStorm WebStorm
    CLion RustRover AppCode ReSharper MSBuild MSTest NUnit XUnit OmniSharp LINQPad HikariCP
    XenServer XenCenter ProxMox TrueNAS FreeNAS OpenWrt OpenVPN OpenLDAP FreeIPA RaspberryPi
    TeamCity GoCD ArgoCD FluxCD OpenTofu HashiCorp CockroachDB TimescaleDB YugabyteDB ScyllaDB
    CouchDB CouchBase Couchbase RethinkDB FaunaDB SurrealDB KeyDB ValKey MeiliSearch TypeSense
    PlanetScale SingleStore MinIO MinGW CygWin LetsEncrypt CertBot MacPorts NodeSource
    DockerDesktop KubeSphere MicroK8s OpenSUSE AlmaLinux RockyLinux AmazonLinux CloudFront
    ElastiCache EventBridge LightSail AzureAD SourceForge WooCommerce PrestaShop OpenCart
    PhpMyAdmin MediaWiki NextCloud OwnCloud JupyterHub RStudio PostHog SendGrid MailChimp
    MailGun TeamViewer AnyDesk GoogleDrive AppStore PlayStore TestFlight ChromeDriver GeckoDriver
    SauceLabs BrowserStack CodeSandbox StackBlitz CodePen JSFiddle CloudRun FireStore SupaBase
    PocketBase SublimeText TextMate BBEdit VisualStudio AndroidStudio DeepSeek MistralAI
    OpenRouter LMStudio GitBook DocuSign SalesForce ServiceNow HubSpot ZenDesk FreshDesk
    MacOSX WinRM SunOS OpenIndiana WebLogic WebSphere JBoss WildFly GlassFish TomEE LiteSpeed
    OpenLiteSpeed HAProxy ModSecurity CrowdSec FortiGate PfSense SonarCloud SonarLint CodeCov
    CodeClimate DependaBot RenovateBot GitPod GitTea MacPro MacMini ThinkPad ChromeBook
    DirectAdmin CPanel"""
)
KNOWN_PACKAGES = _words(
    """numpy scipy pandas matplotlib seaborn sklearn scikit-learn torch pytorch torchvision
    torchaudio tensorflow keras jax sentence-transformers huggingface-hub safetensors urllib3
    chardet charset-normalizer certifi idna simplejson ujson orjson lxml beautifulsoup4 bs4
    pyyaml ruamel tomli tomllib pydantic pydantic-core pydantic-settings fastapi starlette
    uvicorn gunicorn hypercorn django djangorestframework sqlalchemy psycopg psycopg2 asyncpg
    pymysql mysqlclient celery kombu boto3 botocore aiobotocore aiohttp httpx httpcore h11 grpcio
    protobuf pyopenssl pyasn1 paramiko jinja2 markupsafe werkzeug itsdangerous pytz dateutil
    python-dateutil tqdm loguru structlog pyflakes pycodestyle pydocstyle setuptools distutils
    pipenv twine hatchling flit numba cython pybind11 nltk spacy gensim networkx
    kuzu neo4j qdrant-client chromadb faiss faiss-cpu hnswlib openai anthropic langchain
    llama-index tiktoken sentencepiece onnx onnxruntime opencv-python cv2 pyarrow polars duckdb
    dask xarray statsmodels sympy plotly bokeh streamlit gradio selenium playwright puppeteer
    freezegun requests-mock requests-oauthlib requests-toolbelt vcrpy oauthlib pyjwt bcrypt
    passlib argon2-cffi cffi cattrs typer prompt-toolkit docopt pexpect psutil pyinotify
    brotli brotlicffi zstandard lz4 msgpack cbor2 fastmcp tree-sitter omegaconf hydra-core
    wandb mlflow optuna lightgbm xgboost catboost shap bm25s rank-bm25 nbformat nbclient
    ipykernel jupyterlab ipython mkdocs docutils pygments mistune bleach html5lib pyquery scrapy
    feedparser python-dotenv pyperclip platformdirs appdirs filelock portalocker tenacity
    cachetools diskcache joblib cloudpickle greenlet gevent eventlet anyio sniffio asgiref
    websocket-client pyzmq kafka-python confluent-kafka pika pymongo mongoengine opensearch-py
    pgvector sqlite-vec sqlmodel peewee tortoise-orm edgedb asyncio urllib urllib2 httplib
    cookielib itertools functools subprocess multiprocessing pathlib hashlib sqlite3 unittest
    doctest argparse getopt tempfile shutil dataclasses contextlib importlib zipfile tarfile
    zlib ssl socketserver smtplib imaplib configparser pkgutil pkg-resources importlib-metadata
    typing-extensions mypy-extensions react-dom nextjs nuxt svelte sveltekit koa fastify
    nestjs lodash axios node-fetch superagent dayjs date-fns luxon zod yup joi ajv
    vitest sinon puppeteer jsdom cheerio mongoose sequelize typeorm knex mysql2 ioredis
    pino nodemon ts-node tslib rxjs redux mobx zustand immer tailwindcss postcss autoprefixer
    styled-components left-pad yargs inquirer semver nanoid bcryptjs jsonwebtoken drizzle-orm
    trpc hono serde serde-json tokio reqwest actix-web axum clap anyhow thiserror rayon chrono
    env-logger sqlx testify gorm logrus nokogiri sidekiq mockito lombok log4j slf4j
    guava pyodbc cx-oracle oracledb markdown-it-py pyproject-hooks build-backend pytest-cov"""
)
# a build, test or environment tool is named in prose as the program, not as a dependency
# ("which version of RSpec you're running", "Creating virtualenv at", "Combined with esbuild"):
# like the ambiguous names, these need a version or a library/package word
_TOOL_PACKAGES = "rspec virtualenv vite webpack esbuild"
AMBIGUOUS_PACKAGES = _words(_TOOL_PACKAGES + """
    requests request flask express react vue next rich click six mock attrs black jest
    pytest pip npm yarn pnpm poetry ruff mypy tox nox uv typescript eslint prettier babel
    jupyter sphinx alembic hypothesis responses marshmallow arrow pendulum fire trio tornado
    twisted cryptography transformers tokenizers datasets wheel pillow mocha chai cypress
    commander chalk winston morgan helmet cors passport moment uuid emotion rollup parcel
    redis flax dill toml regex tracing log rand diesel warp gin cobra viper zap rails puma
    devise jackson prisma stripe firebase graphql apollo ws motor databases"""
)
PACKAGE_PREFIXES = (
    "requests-",
    "pytest-",
    "django-",
    "flask-",
    "sphinx-",
    "types-",
    "react-",
    "eslint-",
    "babel-",
    "webpack-",
    "vue-",
    "tree-sitter-",
    "mkdocs-",
    "jupyter-",
    "sentence-",
    "typescript-",
)
PACKAGE_SUFFIXES = ("-loader", "-webpack-plugin")  # webpack's naming: `ts-loader`
NOT_PACKAGES = _words("python python3 node nodejs go golang java ruby rust ubuntu debian")
_QUALIFIER_AMBIGUOUS = _words("requests flask react vue pytest express attrs jest")
_LEXICON = (
    KNOWN_PACKAGES | AMBIGUOUS_PACKAGES | frozenset(n.replace("-", "_") for n in KNOWN_PACKAGES)
)

SUBCOMMANDS: dict[str, frozenset[str]] = {
    "git": _words(
        """add am apply bisect blame branch checkout cherry-pick clean clone commit config
        describe diff fetch format-patch grep init log merge mv pull push rebase reflog remote
        reset restore revert rev-parse rm show stash status submodule switch tag worktree lfs
        gc fsck"""
    ),
    "npm": _words(
        """install i ci run test start build publish audit update uninstall init exec link ls
        outdated pack version dedupe prune cache login whoami view info config rebuild"""
    ),
    "pnpm": _words(
        """install i add remove rm run test start build exec dlx update up outdated audit
        publish store why list ls"""
    ),
    "yarn": _words(
        """install add remove run test start build upgrade up dlx exec why workspace
        workspaces cache audit info init set"""
    ),
    "bun": _words("install add remove run test build x create upgrade"),
    "pip": _words("install uninstall download freeze list show check wheel cache config index"),
    "pip3": _words("install uninstall download freeze list show check wheel"),
    "pipx": _words("install run uninstall upgrade list ensurepath inject"),
    "uv": _words("pip run sync lock add remove venv tool python init build publish tree cache"),
    "poetry": _words("install add remove update lock run shell build publish init show env"),
    "pdm": _words("install add remove update lock run sync build publish init"),
    "cargo": _words(
        """build run test check clippy fmt add remove update install publish new init doc
        bench clean fix tree"""
    ),
    "docker": _words(
        """build run exec ps logs compose pull push images image rm rmi stop start restart
        inspect tag login network volume system container buildx kill cp top stats"""
    ),
    "docker-compose": _words("up down build run exec logs ps pull restart stop start config"),
    "kubectl": _words(
        """get describe apply delete logs exec port-forward rollout scale create edit patch
        config top cp label annotate expose run set wait drain cordon"""
    ),
    "helm": _words("install upgrade uninstall list repo template lint package rollback status"),
    "terraform": _words("init plan apply destroy validate fmt output import state workspace"),
    "go": _words(
        """build run test get install mod vet fmt generate clean env list version work tool doc"""
    ),
    "make": _words(
        """test tests install build lint check clean all dev docs doc format fmt release demo
        bench run serve deploy setup bootstrap ci coverage typecheck e2e migrate up down"""
    ),
    "brew": _words("install uninstall upgrade update list info services tap"),
    "apt": _words("install remove update upgrade search show purge"),
    "apt-get": _words("install remove update upgrade purge autoremove"),
    "conda": _words("install create activate env list remove update run"),
    "gh": _words("pr issue repo run workflow release auth api"),
    "alembic": _words("upgrade downgrade revision history current stamp heads init merge"),
    "graphmem": _words(
        """ingest add search get evidence brief forget stats doctor serve extract redact
        verify init install hooks"""
    ),
    "npx": _words(
        """prisma tsc eslint prettier jest vitest playwright next vite create-react-app
        ts-node tsx nx turbo"""
    ),
    "ruff": _words("check format"),
    "gcloud": _words("auth config compute container run functions app builds"),
    "aws": _words("s3 ec2 ecr ecs lambda iam sts logs cloudformation configure"),
    "systemctl": _words("start stop restart status enable disable reload"),
}
_NODE_RUNNERS = {"npm", "pnpm", "yarn", "bun"}  # `<runner> run <task>` was always named with its task
_RUNNERS = _NODE_RUNNERS | {"mise", "uv", "poetry", "pdm", "pipx"}
PLAIN_EXECUTABLES = _words(
    """pytest python python3 py node deno tsc mypy flake8 pylint black isort tox nox curl wget
    psql mysql redis-cli sqlite3 ssh scp rsync ls cat grep rg sed awk find chmod chown mkdir rm
    cp mv tar unzip echo export source cd jq journalctl rustc javac java mvn gradle gradlew
    ./gradlew bundle rails rake gem php composer dotnet swift xcodebuild vitest jest eslint
    prettier webpack vite esbuild uvicorn gunicorn celery flask django-admin sudo env next
    sleep head tail which touch kill ps wc xargs tee php mix sqlx mvnw ruby perl bash sh zsh"""
)
EXECUTABLES = PLAIN_EXECUTABLES | frozenset(SUBCOMMANDS)
_ENGLISH_EXECUTABLES = _words(
    "make go find source test open time sort which echo export cd next cat env set sleep head "
    "tail touch kill"
)
# In prose any known program that is no English word may start a command; one without a
# subcommand table needs a flag, a path-like word or a common verb after it (_first_arg_ok).
_PROSE_EXECUTABLES = (frozenset(SUBCOMMANDS) - {"make", "go"}) | (
    PLAIN_EXECUTABLES - _ENGLISH_EXECUTABLES - _words("sudo env py black next swift")) | _words("ruff")
_COMMON_VERBS = _words(
    "install update upgrade uninstall build run test new init sync exec serve server start migrate "
    "require doctor console")
_VALUE_FLAGS = _words(
    """-r -c -e -i -t -p -f -k -m -n -o -C -F --requirement --constraint --index-url
    --extra-index-url --features --target --prefix --root --registry --tag --python --group
    --name --namespace --file --out --output -out -o"""
)

ERRNO_NAMES = _words(
    """EACCES EADDRINUSE EADDRNOTAVAIL EAGAIN EBADF EBUSY ECONNABORTED ECONNREFUSED ECONNRESET
    EEXIST EHOSTUNREACH EINTR EINVAL EIO EISDIR ELOOP EMFILE ENAMETOOLONG ENETDOWN ENETUNREACH
    ENFILE ENOBUFS ENODEV ENOENT ENOMEM ENOSPC ENOTCONN ENOTDIR ENOTEMPTY ENOTFOUND ENOTSUP
    ENOTSOCK ENXIO EPERM EPIPE EPROTO ERANGE EROFS ESPIPE ESRCH ETIMEDOUT ETXTBSY EXDEV
    ELIFECYCLE ERESOLVE EBADENGINE EINTEGRITY EAI_AGAIN ECANCELED EDQUOT EOVERFLOW EWOULDBLOCK
    EALREADY EINPROGRESS ESHUTDOWN EHOSTDOWN ENETRESET EMSGSIZE EDEADLK ENOLCK ENOSYS EFAULT
    EFBIG EMLINK ECHILD ENOEXEC E2BIG EOPNOTSUPP ENOTTY ENOTUNIQ EJSONPARSE EUSAGE E404 E401
    E403 E500 EOTP"""
)
SIGNALS = _words(
    """SIGKILL SIGSEGV SIGTERM SIGINT SIGABRT SIGPIPE SIGHUP SIGBUS SIGILL SIGFPE SIGQUIT
    SIGUSR1 SIGUSR2 SIGALRM SIGCHLD SIGSTOP SIGTSTP SIGCONT SIGTRAP SIGSYS SIGXCPU SIGXFSZ
    SIGWINCH SIGPOLL SIGIOT SIGEMT"""
)
ERROR_STATES = _words(
    """OOMKilled CrashLoopBackOff ImagePullBackOff ErrImagePull CreateContainerConfigError
    CreateContainerError InvalidImageName RunContainerError ContainerCannotRun"""
)
BUILTIN_EXCEPTIONS = _words(
    """KeyboardInterrupt SystemExit StopIteration StopAsyncIteration GeneratorExit
    BaseException Exception BaseExceptionGroup ExceptionGroup"""
)
HTTP_REASONS = (
    "Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|Method Not Allowed|"
    "Not Acceptable|Proxy Authentication Required|Request Timeout|Conflict|Gone|"
    "Length Required|Precondition Failed|Payload Too Large|Request Entity Too Large|"
    "URI Too Long|Unsupported Media Type|Range Not Satisfiable|Expectation Failed|"
    "I'm a teapot|Misdirected Request|Unprocessable Entity|Unprocessable Content|Locked|"
    "Failed Dependency|Too Early|Upgrade Required|Precondition Required|Too Many Requests|"
    "Request Header Fields Too Large|Unavailable For Legal Reasons|Internal Server Error|"
    "Not Implemented|Bad Gateway|Service Unavailable|Gateway Timeout|"
    "HTTP Version Not Supported|Variant Also Negotiates|Insufficient Storage|Loop Detected|"
    "Not Extended|Network Authentication Required|Client Error|Server Error"
)

ENV_WELL_KNOWN = _words(
    """PATH HOME PYTHONPATH PYTHONHOME PYTHONUNBUFFERED PYTHONDONTWRITEBYTECODE PYTHONHASHSEED
    GOPATH GOROOT GOOS GOARCH GOPROXY GOFLAGS KUBECONFIG PGPASSWORD PGHOST PGUSER PGPORT
    PGDATABASE EDITOR VISUAL SHELL TMPDIR LANG LANGUAGE TERM PWD LOGNAME HOSTNAME DISPLAY
    VIRTUAL_ENV NODE_ENV NODE_OPTIONS NODE_PATH HTTP_PROXY HTTPS_PROXY NO_PROXY ALL_PROXY
    FTP_PROXY http_proxy https_proxy no_proxy all_proxy ftp_proxy REQUESTS_CA_BUNDLE
    CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR LD_LIBRARY_PATH LD_PRELOAD DYLD_LIBRARY_PATH
    CUDA_VISIBLE_DEVICES OMP_NUM_THREADS MKL_NUM_THREADS TOKENIZERS_PARALLELISM
    TRANSFORMERS_OFFLINE HF_HUB_OFFLINE HF_HOME RUST_LOG RUST_BACKTRACE CARGO_HOME RUSTUP_HOME
    JAVA_HOME MAVEN_HOME GRADLE_HOME ANDROID_HOME XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME
    XDG_RUNTIME_DIR LC_ALL LC_CTYPE GITHUB_TOKEN GH_TOKEN NPM_TOKEN AWS_PROFILE AWS_REGION
    AWS_DEFAULT_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN DOCKER_HOST
    DATABASE_URL REDIS_URL SECRET_KEY DJANGO_SETTINGS_MODULE FLASK_APP FLASK_ENV PIP_INDEX_URL
    UV_INDEX_URL PYTEST_ADDOPTS COLUMNS LINES TZ"""
)
ENV_CONTEXT_ONLY = _words("CI DEBUG PORT HOST USER ENV MODE TOKEN VERBOSE LOG_LEVEL")
ENV_SUFFIXES = (
    "_URL",
    "_URI",
    "_DSN",
    "_TOKEN",
    "_KEY",
    "_SECRET",
    "_PASSWORD",
    "_PASSWD",
    "_HOME",
    "_PATH",
    "_DIR",
    "_HOST",
    "_PORT",
    "_ENV",
    "_MODE",
    "_LEVEL",
    "_PROFILE",
    "_REGION",
    "_USER",
    "_USERNAME",
    "_KEY_ID",
    "_BUNDLE",
    "_OPTS",
    "_OPTIONS",
    "_FLAGS",
    "_ROOT",
    "_ARGS",
)
ENV_PREFIXES = (
    "AWS_",
    "AZURE_",
    "GCP_",
    "GOOGLE_",
    "GITHUB_",
    "GH_",
    "GRAPHMEM_",
    "NODE_",
    "NPM_",
    "PIP_",
    "UV_",
    "PYTHON",
    "CARGO_",
    "RUST_",
    "HF_",
    "CUDA_",
    "DOCKER_",
    "POSTGRES_",
    "PG",
    "MYSQL_",
    "REDIS_",
    "VITE_",
    "NEXT_PUBLIC_",
    "REACT_APP_",
    "CI_",
    "RUNNER_",
    "XDG_",
    "LC_",
    "SSL_",
    "REQUESTS_",
    "CURL_",
    "OPENAI_",
    "ANTHROPIC_",
    "KUBE",
    "TF_VAR_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
    "OMP_",
    "MKL_",
    "TORCH_",
    "JAVA_",
    "DJANGO_",
    "FLASK_",
    "SENTRY_",
)

# ---------------------------------------------------------------------------------------------
# Regular expressions (all linear-time friendly: no nested unbounded quantifiers)
# ---------------------------------------------------------------------------------------------

_ID = r"[A-Za-z_][A-Za-z0-9_]*"
_BACKTICK_RE = re.compile(r"``([^`\n]{1,300}?)(?:``|'')|`([^`\n]{1,300})`")
_PROMPT_RE = re.compile(r"(?m)^[ \t]*\$[ \t]+(\S[^\n]*?)[ \t]*$")
_RUN_RE = re.compile(r"(?m)^[ \t]*(?:Step \d+/\d+ : )?RUN[ \t]+(\S[^\n]*?)[ \t]*$")
_QUOTED_RE = re.compile(r"""(["'])((?:/[\w.\-]+)*/?[\w.\-]+ [^"'\n]{1,300})\1""")
# round 7: a quoted command named as one by its sentence, whatever the tool: 'Running `inv docker-catchup`',
# 'type \'make help\'', 'use the "gdb ./bylabel core"', 'the "magnet build" command', 'command "maven package"'
_QUOTE_CHAR_RE = re.compile(r"[\"'`]")
_QUOTED_AT_RE = re.compile(r"(\'\'\'|[\"'`])(?P<cmd>[^\"'`\n]{2,200}?)\1")
_CUE_BEFORE_RE = re.compile(r"(?i:\b(?:run|runs|running|ran|execute[sd]?|executing|type|typing|use|using|used|tried|try|call|"
                            r"calling|invoke[sd]?|command)\b:?[ \t]+(?:the[ \t]+)?(?:command[ \t]+)?)$")
_CUE_AFTER_RE = re.compile(r"[ \t]+(?:command|step)\b")
_CUED_HEAD_RE = re.compile(r"(?:\.{0,2}/)?[a-z][\w.\-/]*")
_ENV_ASSIGN_PREFIX_RE = re.compile(r"(?:[A-Z_][A-Z0-9_]*=\S*[ \t]+)+")

_PATH_RE = re.compile(
    r"(?<![\w:/.@~*+\-$\\%=#}<])"
    r"(?P<path>(?:~|\.{1,2}|@)?/?[\w*+~\-@]*[./][\w.*+~\-@/]*)"
    r"(?P<line>(?::\d+){1,2}(?![\d/]))?"
)
_NAMED_FILE_RE = re.compile(
    r"(?<![\w./\-])(?P<path>"
    + "|".join(sorted(EXTENSIONLESS_FILES, key=len, reverse=True)).replace(".", r"\.")
    + r")(?P<line>(?::\d+){1,2}(?![\d/]))?(?![\w\-]|\.\w|/)"
)
# what a name of _NAMED_FILE_RE holds: "file" (Makefile, Dockerfile …) or the whole name (README, LICENSE …)
_NAMED_FILE_NEEDLES = ("file", *sorted(n for n in EXTENSIONLESS_FILES if "file" not in n))
# the working directory of a `user@host:dir$ ` or `root@host:dir# ` prompt
_PROMPT_DIR_RE = re.compile(r"(?m)^[ \t]*[\w.\-]+@[\w.\-]+:(?P<dir>~?/[^\s$#]+|~[^\s$#]+)[$#][ \t]")
_PAREN_LOCATION_RE = re.compile(r"\((\d+(?:,\d+)?)\)")
# a file named as a flag's value or a redirect's target: `--output-file=reqs.txt`, `> seq.hist`
_ARG_FILE_RE = re.compile(r"(?:(?<=\s)--?[\w\-]+=|(?<![>\d&])>>?[ \t]*)(?P<path>[\w~./\-]*\w\.[A-Za-z][A-Za-z0-9]{0,5})"
                          r"(?![\w./\-])")
_VERSIONISH_RE = re.compile(r"^\d|\.\d+\.|^[\w\-]+\.(?:com|org|net|io|dev)$")
# a Windows path without its drive: `\app\Http\Controllers\SetupController.php`
_BACKSLASH_PATH_RE = re.compile(r"(?<![\w:\\])\\?(?:[\w.\-]+\\)+[\w\-]+\.[A-Za-z]\w{0,5}(?![\w\\])")
_DATE_PATH_RE = re.compile(r"\d{1,4}/(?:\d{1,2}|[A-Z][a-z]{2})/\d{2,4}(?::\d\d)*")
_PROGRAM_FILES = r"Program Files(?: \(x86\))?"  # the one Windows folder every path may cross
_DRIVE_PATH_RE = re.compile(
    r"(?<![\w/])[A-Za-z]:/(?:" + _PROGRAM_FILES + r"|[\w.\-]+)(?:/[\w.\-]+)*/?(?<![.,;])")
_WINPATH_RE = re.compile(
    r"(?<![\w])[A-Za-z]:\\(?:(?:" + _PROGRAM_FILES + r"|[^\s\\:*?\"'<>|]+)\\)*[^\s\\:*?\"'<>|,;)]+")
_URL_RE = re.compile(r"(?<![\w@.])(?:[a-z][a-z0-9+.\-]{1,15})://[^\s<>\"'`]+")
# round 8 "md-url": a markdown link whose text is a URL ends at `](`: `[https://x/y](https://x/y)` is two URLs
_URL_8_RE = re.compile(r"(?<![\w@.])(?:[a-z][a-z0-9+.\-]{1,15})://(?:[^\s<>\"'`\]]|\](?!\())+")
_GIT_SSH_RE = re.compile(r"(?<![\w.])git@[\w.\-]+:[\w./~\-]+")
_HOSTPORT_RE = re.compile(
    r"(?<![\w.:@\-])(?<![\w:/]/)(?P<host>localhost|(?:\d{1,3}\.){3}\d{1,3}|"
    r"(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+[a-z]{2,})"
    r"(?P<port>:\d{2,5})(?P<path>/[^\s<>\"'`)]*)?(?![\w\-]|:\S|\.\w)"
)
_DOMAIN_RE = re.compile(
    r"(?<![\w.@/:\-$])(?P<dom>(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+(?P<tld>[a-z]{2,12}))"
    r"(?P<rest>:[\w.\-]+/[\w./\-]+|/[^\s<>\"'`)]*)?(?![\w@\-]|\.\w)"
)
_PORT_WORD_RE = re.compile(r"\b[Pp]ort\s+(\d{2,5})\b")
_BARE_PORT_RE = re.compile(r"(?<=[\s(])(:\d{2,5})(?![\w:.]|\.\d)")
_ROUTE_RE = re.compile(
    r"(?:\b(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)[ \t]+|\burl:[ \t]*|"
    r"\b(?:route|endpoint)s?\b[^.;\n/]{0,25}?[ \t])(/[\w\-./~%{}:?=&]*)"
)

_COMMIT_RE = re.compile(r"(?:(?<=\.\.)|(?<![\w\-.@#:+]))([0-9a-f]{7,40})(?![\w\-@]|\.\w)")
_HEX7_RE = re.compile(r"[0-9a-f]{7}")  # what _COMMIT_RE needs: a cheap gate (6% of lines) before its lookbehind
# round 8 "kv-hex": the hex value of a `key=` that names no commit is an id or a token, not a SHA
_KV_KEY_RE = re.compile(r"(?<![\w.\-])(?P<key>[A-Za-z][\w.\-]*)=$")
_SHA_KEYS = _words("commit sha rev revision ref head git_commit git_sha commit_sha commit_id sha1 gitcommit")
_COMMIT_OUTPUT_RE = re.compile(r"(?m)^\[[\w./\-]+(?: \(root-commit\))? ([0-9a-f]{7,12})\] ")
_COMMIT_WORD_RE = re.compile(
    r"(?i)\b(?:commit|commits|revert|reverts|reverted|cherry-pick|sha|rev|fixed in|in)\s*:?\s*$"
)
_HASH_CONTEXT_RE = re.compile(
    r"(?i)\b(?:md5|sha-?1|sha-?256|sha-?512|hexdigests?|digests?|checksums?|etag|"
    r"container(?: id)?|image(?: id)?|uuid|layer|built|hash(?:es)?|keys?|tokens?|nonce|salt|"
    r"blob id|object id)\b[^\n]{0,40}$"
)

_EXC_MODULE_RE = re.compile(
    r"(?<![\w.])(?P<name>(?:[a-z_][\w]*\.)*(?:errors|exceptions|exc|error)\.[A-Z][A-Za-z0-9]+)\b"
)
_BUILTIN_EXC_RE = re.compile(
    r"\b(?:" + "|".join(sorted(BUILTIN_EXCEPTIONS - {"Exception"})) + r")\b"
)
_HTTP_NUM_RE = re.compile(r"(?<!\d)[45]\d\d(?!\d)")
_EXC_RE = re.compile(
    r"(?<![\w.\\])(?P<name>(?:[A-Za-z_][\w]*(?:\.|::|\\{1,2}))*[A-Z][A-Za-z0-9]*?"
    r"(?:Error|Exception|Warning|Interrupt)(?P<plural>s)?)(?![\w])"
)
_TRACEBACK_HEAD_RE = re.compile(
    r"(?m)^[ \t]*(?:E[ \t]+|Uncaught[ \t]+|Exception in thread \"[^\"\n]*\"[ \t]+)?"
    r"(?P<name>(?:[a-z_][\w]*\.)*[A-Z][A-Za-z0-9]+(?:(?:\.|::)[A-Z][A-Za-z0-9]+)?):(?:[ \t]+(?P<msg>[^\n]*))?$"
)
_RUBY_UNCAUGHT_RE = re.compile(r"(?m):in `[^'\n]+': [^\n]*\((?P<name>[A-Z]\w*(?:::[A-Z]\w*)+)\)[ \t]*$")
_MSG_RE = re.compile(r":[ \t]+([^\n]{1,500})")
_RAISE_CTX_RE = re.compile(
    r"\b(?i:raise|raises|raised|raising|throw|throws|thrown|throwing|catch|catches|caught|"
    r"except)\s+(?:an?\s+|the\s+)?(?P<name>(?:[a-z_][\w]*\.)*[A-Z][A-Za-z0-9]+)\b"
)
_EXC_WORD_RE = re.compile(r"(?<![\w.])(?P<name>[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\s+exceptions?\b")
_ERRNO_RE = re.compile(r"(?<![\w\-])(E[A-Z0-9_]{2,14}|ERR_[A-Z0-9_]{3,60})(?![\w\-])")
_CODES_AFTER_ERROR_RE = re.compile(
    r"(?:\b(?:[Ee]rrors?|ERRORS?|[Ww]arnings?|WARNINGS?)|--explain)(?:[ \t]+codes?|[ \t]+occurred:|"
    r"[ \t]+have detailed explanations:)?(?:\[|:?[ \t]+[`\"']?)"
    r"(?P<codes>[A-Z]{1,4}\d{3,5}(?:(?:,|,?[ \t]+(?:and|or))[ \t]*[A-Z]{1,4}\d{3,5})*)\b"
)
_CAUGHT_TUPLE_RE = re.compile(r"\b(?:except|rescue|catch)[ \t]*\((?P<names>[\w.]+(?:[ \t]*,[ \t]*[\w.]+)+)\)")
_CHECKER_RULE_RE = re.compile(r"\((?P<rule>report[A-Z]\w+)\)[ \t]*$", re.MULTILINE)
_SIGNAL_RE = re.compile(r"\bSIG[A-Z0-9]{2,6}\b")
_SEGV_RE = re.compile(r"(?i)\bsegmentation fault\b")
_STATE_RE = re.compile(r"\b(?:" + "|".join(sorted(ERROR_STATES)) + r")\b")
_ORA_RE = re.compile(r"\b(?:ORA|PLS|TNS|SP2|IMP|EXP|RMAN)-\d{4,5}\b")
_CVE_RE = re.compile(r"\bCVE[- ]\d{4}[- ]\d{4,7}\b")
_GHSA_RE = re.compile(r"\bGHSA(?:-[0-9a-z]{4}){3}\b")
_TS_RE = re.compile(r"\bTS\d{4,5}\b")
_RUSTC_RE = re.compile(r"\b(?:error|warning)\[(E\d{4})\]")
_LINT_CODE = r"(?:[EWFCRBDNSI]\d{3,4}|(?:SIM|UP|PLR|PLW|PLE|PLC|RUF|ANN|ARG|PT|TRY|PERF|RET|DTZ|TCH|ASYNC|FBT|PIE|PGH)\d{3,4})"
_LINT_RE = re.compile(r"(?<![\w\-])(" + _LINT_CODE + r")\b()")
_LINT_CTX_RE = re.compile(
    r"(?::\d{1,4}:[ \t]|noqa:[ \t]?|disable=|ignore=|select=|\bignore[ \t]|\bselect[ \t]|"
    r"\brule[ \t]|\bcode[ \t])$"
)
_LETTER_DIGITS_RE = re.compile(r"[A-Z]\d{3}")  # what _LINT_RE and _CODE_AFTER_ERR_RE need
_CODE_AFTER_ERR_RE = re.compile(r"(?m)(?<=Error: )(E\d{4,5})\b|^[ \t]*(" + _LINT_CODE + r"):[ \t]")
_SSL_CODE_RE = re.compile(r"\[SSL: ([A-Z][A-Z0-9_]{3,60})\]()")
_TLS_CODE_RE = re.compile(
    r"(?<![\w\-])(CERTIFICATE_VERIFY_FAILED|WRONG_VERSION_NUMBER|SSLV3_ALERT_HANDSHAKE_FAILURE|"
    r"UNSAFE_LEGACY_RENEGOTIATION_DISABLED|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|"
    r"UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|CERT_HAS_EXPIRED|"
    r"TLSV1_ALERT_PROTOCOL_VERSION|TLSV1_ALERT_UNKNOWN_CA)(?![\w\-])()"
)
_ERRNO_NUM_RE = re.compile(
    r"\[((?:Errno|WinError) -?\d{1,6})\]|\b((?:Error|ERROR|errno) \d{1,5})\b"
)
_RETURNED_EXIT_RE = re.compile(r"\breturned (?P<t>(?P<n>-?\d{1,3}) exit status)\b")  # `ld returned 1 exit status`
_EXIT_RE = re.compile(
    r"(?i)\b(?P<t>(?:exit(?:ed)?(?: with)?(?: exit)? (?:code|status)|non-zero (?:exit )?code|error code)"
    r":? ?(?P<n>-?\d{1,3}))\b"
)
_HTTP_PREFIX_RE = re.compile(
    r"\bHTTP(?:/\d(?:\.\d)?)?[ \t]+(?P<n>[45]\d\d)\b(?:[ \t]+(?:" + HTTP_REASONS + r")\b)?"
)
_HTTP_REASON_RE = re.compile(r"(?<![\w/.])(?P<n>[45]\d\d)[ \t]+(?:" + HTTP_REASONS + r")\b")
# an access log's status after the quoted request: `"GET /client/ HTTP/1.1" 503 394`
_ACCESS_LOG_RE = re.compile(r"\"[A-Z]{3,7} \S+ HTTP/\d(?:\.\d)?\" (?P<n>[45]\d\d) ")
_HTTP_RETURNED_RE = re.compile(
    r"(?<![\w.\-/])(?P<n>[45]\d\d)[ \t]+(?:is|was|gets|got)[ \t]+returned\b"
)
_HTTP_CTX_RE = re.compile(
    r"(?i)\b(?:status(?: code)?|returned|returns|returning|respond(?:s|ed)? with(?: the| an?)?|"
    r"got(?: an?)?|with(?: an?)? http|retr(?:y|ies|ied|ying) on|returned error:?|error code:?)"
    r"[ \t]+(?P<n>[45]\d\d)\b"
)

_CALL_RE = re.compile(
    r"(?<![\w.$@\-])(?P<name>" + _ID + r"(?:(?:\.|::)" + _ID + r")*)(?P<paren>\(\)|\((?!\)))"
)
_DOTTED_RE = re.compile(
    r"(?<![\w.$@/\-])(?P<name>" + _ID + r"(?:(?:\.|::)" + _ID + r")+(?::" + _ID + r")?)"
    r"(?![\w@/\-]|\.\w|:\w|\()"
)
_LEADING_DOT_RE = re.compile(
    r"(?:^|(?<=[\s`(\['\"]))\.(?P<name>[a-z_][A-Za-z0-9_]*)(?P<paren>\(\))?(?![\w./\-])"
)
_CAMEL_RE = re.compile(r"(?<![\w.@$/\-])([A-Za-z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*)(?![\w@\-]|\.\w)")
_CODE_WORD_BEFORE_RE = re.compile(
    r"\b(?:class|struct|interface|type|enum|trait|method|function|component|module|object|"
    r"instance|new|extends|implements|import|from|raise|throw|catch|def|fn|func|subclass|"
    r"validation errors? for)[ \t]+$"  # pydantic names the model: `2 validation errors for User`
)
_CODE_WORD_AFTER_RE = re.compile(
    r"[ \t]+(?:class(?:es)?|struct|interface|type|enum|trait|methods?|functions?|components?|"
    r"objects?|instances?|constructor|initiali[sz]ation|tests?|fields?|hooks?|props?)\b"
)
_SNAKE_RE = re.compile(
    r"(?<![\w.$@/\-])(_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*|_+[A-Za-z][A-Za-z0-9]*_*|"
    r"[a-z][a-z0-9]*_+)(?![\w@/\-*]|\.\w|\()"
)
_NOT_CLASSES = _words(
    "Python Java JavaScript Ruby Go Rust Node Swift Kotlin Perl Lua Dart Business World Data Any"
)
_HASH_METHOD_RE = re.compile(r"(?<![\w#/])([A-Z][A-Za-z0-9]*#[a-z_][A-Za-z0-9_]*[?!]?)(?![\w#])")
# round 7: a Ruby method keeps its namespace: `Api::ErrorsController#from_ember`, `RSpec::Expectations#fail_with`
_NS_HASH_METHOD_RE = re.compile(r"(?<![\w#/:])((?:[A-Z][A-Za-z0-9]*::)*[A-Z][A-Za-z0-9]*#[a-z_][A-Za-z0-9_]*[?!]?)(?![\w#])")
# round 7: a missing member named by its runtime or compiler: Python's "has no attribute 'spam'", TypeScript's
# "Property 'toJS' does not exist on type 'Particle'" (the member, and the type unless a primitive), JavaScript's
# "Cannot read property 'map' of undefined", "Cannot read properties of undefined (reading 'map')"
_MISSING_MEMBER_RE = re.compile(
    r"\bhas no attribute ['\"](?P<a>[A-Za-z_]\w*)['\"]|"
    r"\b[Pp]roperty ['\"](?P<p>[A-Za-z_$][\w$]*)['\"] does not exist on (?:value of )?type ['\"](?P<t>[A-Za-z_][\w.]*)['\"]|"
    r"\bCannot read propert(?:y|ies) ['\"](?P<j>[A-Za-z_$][\w$]*)['\"] of\b|\(reading ['\"](?P<k>[A-Za-z_$][\w$]*)['\"]\)"
)
# round 7: a logger's abbreviated class name, as Logback/Spring print it: `o.s.d.r.c.RepositoryConfigurationDelegate`
# (not in a log line's `[c.c.a.d.Worker]` brackets, which the sets leave unlabelled)
_LOGGER_HINT_RE = re.compile(r"\.[a-z]\.[A-Za-z]")  # a literal first: a cheap pre-check
_LOGGER_NAME_RE = re.compile(r"(?<![\w.\[])(?P<name>(?:[a-z]\.){2,}[A-Z][A-Za-z0-9]+)(?![\w.\]]|\.\w)")
_TS_PRIMITIVES = _words("unknown any never object string number boolean bigint symbol undefined null void")
# round 7: make's failed target is a target, not code: `make[2]: *** [CMakeFiles/x.dir/build.make:210: x] Error 1`;
# a single word in markdown emphasis is prose (`I _think_ with`), or, snake-cased, the name inside (`_allow_failure_`)
_MAKE_TARGET_RE = re.compile(r"\*\*\* \[[^\]\n]*:\d+: ([^\]\s]+)\] Error \d")
_WORD_EMPHASIS_RE = re.compile(r"(?<![\w`*])_([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*)_(?=[ \t]|[.,;:!?)]|$)")
_KWARG_RE = re.compile(r"(?<![\w.])(" + _ID + r")=(?:True|False|None)\b")
_FRAME_RE = re.compile(r"(?m)^[ \t]*File \"[^\"\n]+\", line \d+, in (?:block (?:\(\d+ levels\) )?in )?"
                       r"(?!block\b)(?P<name>[A-Za-z_][\w.]*)(?![\w(])")
# Ruby's frame: "task.rb:205:in `block in execute'" names `execute`
_RUBY_BLOCK_RE = re.compile(r"\bin `(?:block (?:\(\d+ levels\) )?in )(?P<name>[A-Za-z_]\w*[?!]?)'")
# a JVM / .NET frame keeps its `$` parts: `at com.foo.Outer$Inner.run(`, `Ctl.lambda$exec$10(`
_JVM_FRAME_RE = re.compile(r"(?m)^[ \t]*at[ \t]+([A-Za-z_][\w]*(?:[.$][\w<>]+)*\$[\w.$<>]*[\w>])\(")
_OBJ_RE = re.compile(
    r"(?<=[a-z,]\s)(?P<name>[A-Z][a-z0-9]+)[ \t]+(?:objects?|class|classes|instances?)\b"
)
_BACKTICK_SYMBOL_RE = re.compile(
    r"\.?(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?)"
    r"(?:=[\w.\"']*)?"
)
# a PHP namespace path: `Illuminate\Foundation\Application`, `Vendor\Pkg\Cls::method` (a Windows
# path has a drive or a dotted file name, so it never starts or ends like this)
_NAMESPACE_RE = re.compile(
    r"(?<![\w\\.:/])(?P<name>[A-Za-z_]\w*(?:\\{1,2}[A-Z]\w*)+(?:::[A-Za-z_]\w*(?:\(\))?)?)(?![\w\\]|\.\w)"
)
# PHP's `SitesController->index()`; Kotlin's "Unresolved reference: main"
_ARROW_CALL_RE = re.compile(r"(?<![\w>$])(?P<name>[A-Z]\w*->[A-Za-z_]\w*(?:\(\))?)(?![\w(])")
_UNRESOLVED_RE = re.compile(r"\bUnresolved reference: (?P<name>[A-Za-z_]\w*)\b")
_RUBY_QUOTE_RE = re.compile(r"`(?P<name>[A-Za-z_][\w]*[?!]?)'")
_QUOTED_NAME_RE = re.compile(
    r"\b(?:Type of|[Tt]he name|namespace name|[Vv]ariable|Class|Interface|Trait)[ \t]+"
    r"[\"'](?P<name>[A-Za-z_][\w]*)[\"']"  # PHP's Class 'App' not found, `variable "opts" is unused`
)
_ARITY_RE = re.compile(
    r"(?<![\w./])(?P<name>(?:[A-Z]\w*\.)+[a-z_]\w*[?!]?/\d|"
    r"(?<=function )[a-z_]\w*[?!]?/\d|(?<=[\s(]:)[a-z_]\w*\.[a-z_]\w*/\d)(?![\w/])"
)
_SLASH_DIGIT_RE = re.compile(r"/\d")
_PRODUCT_AFTER_RE = re.compile(r"/\d|[ \t]\d+(?:\.\d+)*\b(?![.,]?\w)")
_EMPHASIS_RE = re.compile(r"(?<![\w`])_[A-Za-z][^_\n]*?\s[^_\n]*?\S_(?![\w`])")
_KEYWORDS = _words("async await none null nil true false self this")
_RUNNER_TASK_RE = re.compile(r"(\S+)[ \t]+(\S+)")
_TASK_RUNNERS = _words("mix rake make just invoke grunt gulp gradle ./gradlew mvn ./mvnw")
_LOG_LEVELS = _words("err error warn warning notice info verb debug http timing sill fatal")
_VENDORS = ("Apache", "Microsoft", "Google", "Amazon", "AWS", "Azure", "Oracle", "IBM", "JetBrains",
            "Adobe", "Atlassian", "Mozilla", "Apple", "Eclipse", "HashiCorp", "Cisco", "VMware",
            "Citrix", "Red Hat", "Nvidia", "NVIDIA", "Intel")
# (pattern, group of the name, a substring the text must hold, and one of these too if any);
# no pattern starts with \b or a lookbehind: re would then try every position, at twice the cost.
_NOT_CODE_RES = (
    (re.compile(r"(?m)^[ \t]*([\w.\-]+)[ \t]+\|"), 1, "|", ()),
    (re.compile(r"</?([\w\-]+)[ >/]"), 1, "<", ()),
    (re.compile(r"\(node:([\w/]+):\d"), 1, "(node:", ()),
    (re.compile(r"\b([a-z]{2}_[A-Z]{2}(?:\.[\w\-]+)?|x86_64|aarch64|amd64|arm64|i686)\b"), 1, "_", ()),
    (re.compile(r"(?<![\w.\-/])([a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*_\d+)(?![\w\-(=]|\.\w)"), 1, "_",
     ("docker", "Docker", "compose", "ontainer", "podman", "Attaching ", "Creating ", "Starting ",
      "Stopping ", "exited with code")),
    (re.compile(r"(?m)^[ \t]*([a-z]+(?:_[a-z]+)+)[ \t]+[^;\n{}()=]+;[ \t]*$"), 1, ";", ()),
    (re.compile(r":(?<![\w:]:)([a-z0-9+\-]+(?:_[a-z0-9+\-]+)+):(?![\w:])"), 1, "_", (":",)),
    (re.compile(r"(?:[Ss]tatus|[Ss]tate|[Pp]hase|[Rr]eason)[\"']?[ \t]*[:=][ \t]*[\"']?([A-Z][A-Za-z]+)\b"),
     1, "", ("tatus", "tate", "hase", "eason")),
    (re.compile(r"(?:Normal|Warning)[ \t]{2,}([A-Z][A-Za-z]+)[ \t]{2,}"), 1, "  ", ("Normal", "Warning")),
    (re.compile(r"(?:" + "|".join(_VENDORS) + r")[ \t]+([A-Z][A-Za-z0-9]+)"), 1, " ", ()),
    # Ruby prints a receiver as value:Class: `undefined method `x' for nil:NilClass`
    (re.compile(r"(?:nil|true|false|main):([A-Z]\w+)"), 1, ":", ("nil:", "true:", "false:", "main:")),
    # a JVM option (`-XX:TieredStopAtLevel=1`) and a Spring log line's thread (`--- [  restartedMain]`)
    (re.compile(r"-XX:[+\-]?([A-Za-z]\w*)"), 1, "-XX:", ()),
    (re.compile(r"--- \[[ \t]*([\w\-]+)\]"), 1, "--- [", ()),
    # a changelog entry's scope: `* in_http: Add ...`, `- child_process helper: Fix ...`
    (re.compile(r"(?m)^[ \t]*[-*+][ \t]+([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?:[ \t]+[a-z]+)?:[ \t]+[A-Z]"), 1, ": ", ()),
    # a shell prompt's working directory: `➜  my_app git:(main) ✗`, `me@host my_app % `
    (re.compile(r"(?m)^[ \t]*(?:➜|[\w.\-]+@[\w.\-]+)[ \t]+([\w.\-]+)[ \t]+(?:git:\(|[%$#][ \t])"), 1, " ", ("➜", "@")),
    # a setting given on a command line: `--set controller.admissionWebhooks.enabled=false`, `-Dkey=v`
    (re.compile(r"(?:--set(?:-string)?[ \t=]+|[ \t]-[DP])([\w.\-]+)="), 1, "=", ("--set", " -D", " -P")),
    # an indented config key with its value (YAML, a manifest): `  apiVersion: networking.k8s.io/v1`
    (re.compile(r"(?m)^(?:[ \t]{2,}|[ \t]*-[ \t]+)([A-Za-z_][\w\-]*):[ \t]+(?![(\[{]|function\b)\S"), 1, ": ", ()),
    # the task a task runner runs is a name, not code: `mix phx.new`, `rake db:migrate`
    (re.compile(r"(?:mix|rake)(?:[ \t]+do)?[ \t]+([a-z_]\w*(?:[.:][a-z_]\w*)+)"), 1, " ", ("mix ", "rake ")),
    # a Gradle task path: `Task :buildSrc:compileKotlin`, quoted: "of task ':compileKotlin'",
    # "for configuration ':app:debugCompileClasspath'"
    (re.compile(r"(?<=:)([A-Za-z][\w\-]*)(?=[: ]|$)"), 1, "Task :", ()),
    (re.compile(r"(?:task|configuration|project) '(?::[\w\-]+)*:([A-Za-z][\w\-]*)'"), 1, " ':",
     ("task '", "configuration '", "project '")),
    # a zsh prompt's host: `myMac % python3 run.py`
    (re.compile(r"(?m)^[ \t]*([\w.\-]+)[ \t]+%[ \t]"), 1, "%", ()),
    # a directory named as one: "when `_build` folder is empty"
    (re.compile(r"`?([\w.\-]+)`?[ \t]+(?:folder|directory)\b"), 1, "", (" folder", " directory")),
)
_LOGFMT_KEY_RE = re.compile(r"(?m)(?:^|(?<![,;][ \t])(?<=[ \t]))([A-Za-z_][\w.\-]*)=(?=[^\s=])")
_UNDEFINED_RE = re.compile(r"\bundefined: (?P<name>" + _ID + r")")

# `Foo$Bar` is a JVM nested class or a generated name (`lambda$run$0`), not a reference to `$Bar`
# `${X}`, and `${X:-default}` / `${X-d}` / `${X:?msg}` / `${X:=d}` as written (compose files, shells)
_ENV_REF_RE = re.compile(r"\$\{(?P<b>[A-Za-z_][A-Za-z0-9_]*)(?::?[-=?+][^}\s]*)?\}|(?<![\w$])\$(?P<s>[A-Za-z_][A-Za-z0-9_]*)")
_ENV_ASSIGN_RE = re.compile(r"(?<![\w.\-$/])(?P<name>[A-Z][A-Z0-9_]+)=(?=[^\s=]|\"|'|$)")
_ENV_ACCESS_RE = re.compile(
    r"(?:os\.environ(?:\.get)?|os\.getenv|getenv|ENV|env::var|std::env::var|System\.get_?env|"
    r"process\.env)(?:\[\s*|\(\s*)[\"'](?P<a>[A-Za-z_][A-Za-z0-9_]*)[\"']|"
    r"process\.env\.(?P<b>[A-Za-z_][A-Za-z0-9_]*)"
)
_ENV_ACCESSOR_SYMBOL_RE = re.compile(
    r"^(?:os\.environ(?:\.get)?|os\.getenv|process\.env(?:\.\w+)?|System\.getenv|env::var|"
    r"std::env::var)$"
)
_ENV_CTX_RE = re.compile(
    r"(?i)(?:\b(?:environment|env|environ)\s+var(?:iable)?s?\s+`?(?P<a>[A-Za-z_][A-Za-z0-9_]*)|"
    r"(?<![\w$])`?(?P<b>[A-Za-z_][A-Za-z0-9_]*)`?\s+(?:environment|env|environ)\s+var(?:iable)?s?\b)"
)
_KEYERROR_ENV_RE = re.compile(r"\bKeyError: ['\"](?P<n>[A-Z][A-Z0-9_]{2,})['\"]")
_UPPER_SNAKE_RE = re.compile(r"(?<![\w.$\-/])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w\-(])")
_CAPS_RE = re.compile(r"\b[A-Z][A-Z0-9]+\b")
_PROXY_RE = re.compile(r"(?<![\w$])(?:https?|no|all|ftp)_proxy\b")
_UPPER_WORD_RE = re.compile(r"(?<![\w.$\-/])([A-Z][A-Z0-9]{1,20})(?![\w\-(.]|\.\w)")

_PIN_RE = re.compile(
    r"(?<![\w@.\-/=<>!~])(?P<name>@?[A-Za-z][\w.\-]*(?:/[\w.\-]+)?)(?:\[[\w,\-]+\])?"
    r"(?P<spec>(?:===|==|>=|<=|~=|!=|<|>)[ ]?[\^~]?\d[\w.*+!\-]*"
    r"(?:,[ ]?(?:===|==|>=|<=|~=|!=|<|>)[ ]?\d[\w.*+!\-]*)*)(?![\w])"
)
_SPACED_PIN_RE = re.compile(
    r"(?<![\w@.\-/])(?P<name>[A-Za-z][\w.\-]*)[ ](?P<spec>(?:===|==|>=|<=|~=|!=|<|>)[ ]\d[\w.]*)"
)
_AT_RE = re.compile(
    r"(?<![\w@.\-/])(?P<name>@[\w.\-]+/[\w.\-]+|[A-Za-z][\w.\-]*(?:/[\w.\-]+)*)"
    r"@(?P<ver>\"[^\"\s]{1,40}\"|[\^~]?v?\d[\w.\-+]*|latest|next|beta|canary|lts|main|master)"
    r"(?![\w@]|:[~/])"  # `root@4f5d809bb35f:~/app#` is a prompt's user and host
)
# round 8 "at-range": a range operator or a quoted range with spaces after `@` stays with the name (heldout2 decision 4,
# heldout4 decision 1): `@octokit/core@>=4`, `rollup@">=2.50.0 <3.0.0"`
_AT_8_RE = re.compile(
    _AT_RE.pattern.replace(r"@(?P<ver>\"[^\"\s]{1,40}\"|",
                           r"@(?P<ver>\"[^\"\s]{1,40}\"|\"[<>=^~]{1,2}\d[^\"\n]{0,38}\"|(?:[<>]=?|=)v?\d[\w.\-+]*|", 1)
)
_PACKAGE_SHAPES = (
    # npm scoped names are packages wherever they stand: `@loopback/core`
    (re.compile(r"(?<![\w@./\-])(?P<name>@[a-z0-9][\w.\-]*/[a-z0-9](?:[\w.\-]*\w)?)(?:@[\^~]?\d[\w.\-]*)?(?![\w/@])"),
     ("@",), None),
    # Maven coordinates: group:artifact:version
    (re.compile(r"(?<![\w.:])(?P<name>[a-z][\w\-]*(?:\.[a-z][\w\-]*)+:[a-z][\w\-.]*?)(?::\d(?:[\w.\-]*\w)?)(?![\w\-]|\.\w)"),
     (":",), re.compile(r"\.[a-z][\w\-]*:[a-z][\w\-.]*:\d")),
    # a hyphenated name with a version: `Spring-boot 1.5.4`, `spring-core version`
    (re.compile(r"(?<![\w.@/\-])(?P<name>[A-Za-z][a-z0-9]*(?:-[a-z0-9]+)+)(?=[ \t]+(?:v?\d+\.\d+(?:\.\d+)*\b|version\b))"),
     ("-",), re.compile(r"-[a-z0-9]+[ \t]+(?:v?\d|version)")),
    # `dependency :fun_with_flags`, `installing cloudstack-agent`
    # (prose's `dependency pre-bundling` is a noun, Elixir's dependency is an atom)
    (re.compile(r"(?i:\b(?:dependency[ \t]+:|(?:installing|installed)[ \t]+:?))"
                r"(?P<name>[a-z][a-z0-9]*(?:[\-_][a-z0-9]+)+)\b"),
     ("dependency :", "installing ", "installed "), None),
    # quoted import paths: `imports "golang.org/x/net/html"`
    (re.compile(r"\bimports?[ \t]+[\"'](?P<name>[\w.\-]+(?:/[\w.\-]+)+)(?=[\"'])"), ("import",), None),
    # Bundler's gems: `for gem "rails"`, `Could not find gem 'pg'`, a Gemfile's `gem 'devise'`
    (re.compile(r"(?i:\bgems?)[ \t]+[\"'](?P<name>[A-Za-z][\w.\-]*)(?=[\"' ])"), ("gem",), None),
    # Hex: a mix.exs dep `{:phoenix, "~> 1.7"}`, `* postgrex (Hex package)`, `Failed to use "x" (version`
    (re.compile(r"\{:(?P<name>[a-z_]\w*)(?=,[ \t]*[\"'][~>=< ]*\d)|(?P<name2>[a-z_]\w*)(?= \(Hex package\))|"
                r"Failed to use \"(?P<name3>[a-z_]\w*)(?=\" \(version)"), ("{:", "hex package", "failed to use"), None),
    # Composer's operations: `- Upgrading laravel/framework (v12.1.1 => v12.2.0)`
    (re.compile(r"\b(?:Installing|Updating|Upgrading|Downgrading|Removing|Locking|Downloading)[ \t]+"
                r"(?P<name>[a-z0-9][\w.\-]*/[a-z0-9][\w.\-]*)(?=[ \t]+\(v?\d)"),
     ("installing", "updating", "upgrading", "downgrading", "removing", "locking", "downloading"), None),
    # NuGet's and Composer's wording: `Unable to find package Newtonsoft.Json`, `Package box/spout is`
    (re.compile(r"(?i:package)[ \t]+(?P<name>[A-Za-z][\w\-]*(?:[./][A-Za-z][\w\-]*)+)(?![\w\-/]|\.\w)"),
     ("package ",), None),
    # a Gradle plugin id: `id 'org.jetbrains.kotlin.jvm'`, `[id: 'com.android.application', version`
    (re.compile(r"\bid(?::[ \t]*|[ \t]*\(?[ \t]*)[\"'](?P<name>[a-z][\w\-]*(?:\.[a-z][\w\-]*)+)(?=[\"'])"),
     ("id '", 'id "', "id: '", 'id("', "id('"), None),
    # a resolver's report: `rails (= 4.0.0) was resolved to`, `rack (1.2.1) activated by`
    (re.compile(r"(?<![\w.\-/])(?P<name>[a-z][\w.\-]*[a-z0-9])(?=[ \t]+(?:\((?:[=~<>!]{1,2}[ \t]*)?\d[\w.]*"
                r"(?:,[^)\n]*)?\)|was resolved to\b))"),
     ("resolved to", "activated by", "depends on", "required by"), None),
    # a quoted requirement: NuGet's `Unable to resolve 'Microsoft.NETCore.App (>= 1.0.0)'`
    (re.compile(r"[\"'](?P<name>[A-Za-z][\w.\-]*[A-Za-z0-9])(?= \((?:[=~<>!]{1,2}[ \t]*)\d[^)\n]*\)[\"'])"),
     (" (>=", " (~>", " (= ", " (<", " (>"), None),
    # `add livefilter 0.1.0 to the dependencies`, `added foo to your Gemfile`
    (re.compile(r"\badd(?:ed|ing)?[ \t]+(?P<name>[a-z][\w.\-]*[a-z0-9])(?=(?:[ \t]+v?\d[\w.\-]*)?[ \t]+to[ \t]+"
                r"(?:the[ \t]+|your[ \t]+|my[ \t]+)?(?:dependencies|deps|Gemfile|mix\.exs|package\.json|requirements))"),
     (" to the dep", " to your dep", " to my dep", " to dep", "gemfile", "mix.exs", "package.json", "requirements"), None),
    # a backticked name and its version: `phoenix_live_view` 0.15.7, `phoenix 1.4.15`
    (re.compile(r"`(?P<name>[a-z][\w\-]*)(?=`[ \t]+v?\d+\.\d|[ \t]+v?\d+\.\d[\w.\-]*`)"), ("`",), None),
    # a package.json dependency: `"react": "^18.0.0"`
    (re.compile(r"\"(?!version\")(?P<name>@?[a-z0-9][\w.\-]*(?:/[\w.\-]+)?)(?=\"[ \t]*:[ \t]*\"[\^~>=<]*\d)"),
     ('":',), None),
)
# A package manager's listing, a line of name and version (mix deps, pip list, gem list, pip freeze's
# older `name (version)`), and Cargo's package id (`monolith v2.0.14 (/path)`, cargo's own quoting).
_LISTING_RE = re.compile(
    r"(?m)^[ \t]*(?P<name>[a-z][\w.\-]*)[ \t]+(?:\(v?\d+\.\d+[\w.\-+]*\)|v?\d+\.\d+[\w.\-+]*)[ \t]*$")
_CARGO_ID_RE = re.compile(r"`(?P<name>[A-Za-z][\w\-]*) v\d+\.\d+\.\d+[\w.\-+]*(?: \(|`)")
_DEP_VERB_BEFORE_RE = re.compile(
    r"(?i)\b(?:install\w*|using|uses?|upgrad\w*|updat\w*|downgrad\w*|requir\w*|pin\w*|bump\w*|"
    r"depends on)\b[^.\n]{0,30}$")
_COLLECTED_RE = re.compile(r"(?m)Installing collected packages: (?P<rest>[^\n]+)")
_BUMPS_LINK_RE = re.compile(r"\bBumps \[(?P<name>[@\w][\w@/.\-]*)\]\(")
_INSTALLED_RE = re.compile(r"(?m)Successfully installed (?P<rest>[^\n]+)")
# cargo's "could not compile `wabt-sys`"; a resolver's "Because foo (1.0) depends on …"; Composer's
# "- vendor/a dev-master requires vendor/b 2.1.*"; pytest's header "pytest-7.4.3, pluggy-1.2.0"
_NOT_COMPILED_RE = re.compile(r"(?i)\b(?:could not|failed to) compile `(?P<name>[\w\-]+)`")
# a resolver's "Because X depends on", and Bundler's conflict tree, a name alone on its indented line:
# "    mercury-rails depends on"
_BECAUSE_RE = re.compile(r"(?:\bBecause |(?m:^)[ \t]+)(?P<name>[A-Za-z][\w.\-]*)(?: \([^)\n]*\))? depends on\b")
_COMPOSER_REQ_RE = re.compile(r"(?m)^[ \t]*- (?P<name>[a-z0-9][\w.\-]*/[\w.\-]+) \S+ requires "
                              r"(?P<dep>[a-z0-9][\w.\-]*/[\w.\-]+)")
_PYTEST_HEADER_RE = re.compile(r"(?m)^(?:platform \S+ -- Python [\d.]+, |plugins: )(?P<rest>[^\n]+)")
_NAME_VER_RE = re.compile(r"(?P<name>[A-Za-z][\w.]*(?:-[A-Za-z][\w.]*)*)-(?P<ver>\d[\w.+!]*)")
_MODULE_CTX_RE = re.compile(
    r"No module named (?:['\"](?P<a>[\w.]+)['\"]|(?P<n>[A-Za-z_]\w*)\b(?!\.\w))|"
    r"cannot import name ['\"][\w.]+['\"] from ['\"](?P<b>[\w.]+)['\"]|"
    r"Cannot find (?:module|type definition file for) ['\"](?P<c>[^'\"\s]+)['\"]|"
    r"\brequire\(['\"](?P<d>[^'\"\s]+)['\"]\)|"
    r"\bF401 ['\"](?P<e>[\w.]+)['\"] imported|"
    r"\bUnused import (?:of )?(?P<f>[\w.]+)|"
    r"\"(?P<j>[\w./\-]+)\" imported and not used|"
    r"\bUnable to import ['\"](?P<k>[\w.]+)['\"]|"
    r"`(?P<l>[\w\-]+)` \((?:lib|bin)\b|"
    r"crate or module `(?P<g>[\w\-]+)`|could not compile `(?P<h>[\w\-]+)`|"
    r"\bfrom ['\"](?P<i>[@\w][\w@/.\-]*)['\"];?$|"
    r"`(?P<m>[A-Za-z_][\w.]*)` (?:is|was|isn't|wasn't|is not|was not) (?:already |now )?imported\b"
)
_IMPORT_LINE_RE = re.compile(
    r"(?m)^[ \t]*(?:>>>[ \t]*)?(?:import[ \t]+(?P<a>[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)|"
    r"from[ \t]+(?P<b>[\w.]+)[ \t]+import\b)"
)
_TOOL_LINE_RE = re.compile(
    r"(?m)^[ \t]*(?:\[[^\]\n]{1,40}\][ \t]+\|[ \t]+)?(?:Compiling|Checking|Downloaded|Downloading|Installing|Collecting|"
    r"Requirement already satisfied:|go: downloading|go: finding)[ \t]+"
    r"(?P<name>[A-Za-z@][\w.\-/]*[\w])(?:[ \t]+v?\d|[ \t]+in\b|[ \t]*$|[ \t]*\()"
)
_GO_OK_RE = re.compile(r"(?m)^(?:ok|FAIL|---)?[ \t]+(?P<name>[a-z][\w.\-]*\.[a-z]{2,}/[\w.\-/]+)\t")
_FROM_PKG_RE = re.compile(r"\(from (?P<name>[A-Za-z][\w.\-]*)(?:[<>=!~][^)]*)?\)")
_BUMP_RE = re.compile(
    r"(?m)^[ \t]*(?:[-*+][ \t]+)?(?:\[[^\]\n]{1,20}\][ \t]+)?(?:Bump|Bumps|Update|Upgrade)[ \t]+(?P<name>[@\w][\w@/.\-]*)[ \t]+from[ \t]+v?\d"
)
_LIB_WORD_RE = re.compile(
    r"(?<![\w.@/\-])`?(?P<name>[A-Za-z][\w.\-]*[a-z0-9])`?[ \t]+(?P<word>library|package|crate|gem|module|"
    r"dependency|lib)\b"
)
# a quoted name said to be a dependency: "add `x` as a dev dependency", '"Kanna" as a target dependency',
# "add missing 'chalk' dependency"
_DEP_RE = re.compile(
    r"(?P<q>[`'\"])(?P<name>[A-Za-z][\w.\-]*[A-Za-z0-9])(?P=q)[ \t]+(?:as[ \t]+an?[ \t]+(?:[\w\-]+[ \t]+)?)?dependency"
)
_VERSION_AFTER_RE = re.compile(
    r"(?:[ \t]+(?:to|from|at|version|v)?[ \t]*v?\d+(?:\.\d+)*\b|[ \t]+v\d)"
)
_WORD_RE = re.compile(
    r"(?<![\w.@\-/])([A-Za-z][A-Za-z0-9]*(?:[\-_][A-Za-z0-9]+)*)(?![\w@\-/]|\.\w)"
)
_LEX_WORD_RE = re.compile(r"[a-z][a-z0-9]*(?:[\-_][a-z0-9]+)*")
_DEP_WORD_RE = re.compile(
    r"(?<![\w.@\-/])(?P<name>[a-z][a-z0-9]*(?:[\-_][a-z0-9]+)*)[ \t]+"
    r"(?:pin|pins|pinned|version|versions|upgrade|bump|floor|ceiling)\b"
)
_SEMVER_NAME_RE = re.compile(
    r"(?<![\w.@\-/])(?P<name>[a-z][a-z0-9]*(?:[\-_][a-z0-9]+)*)[ \t]+v\d+\.\d+\.\d+\b"
)
_QUALIFIER_RE = re.compile(
    r"(?<![\w.@\-/])(?P<name>[a-z][a-z0-9]*(?:[\-_][a-z0-9]+)*)(?:'s?)?[ \t]+"
    r"(?=[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b|[A-Z][A-Za-z0-9]*(?:Error|Exception)\b)"
)
_SWITCH_RE = re.compile(
    r"\bfrom[ \t]+(?P<a>[a-z][\w.\-]*[a-z0-9])[ \t]+to[ \t]+(?P<b>[a-z][\w.\-]*[a-z0-9])\b"
)
_V_DIGIT_RE = re.compile(r"[ \t]v\d")  # what _SEMVER_NAME_RE needs: a cheap gate before its lookbehind
_HUMPS_RE = re.compile(r"[A-Z][a-z0-9]+[A-Z]")  # what _QUALIFIER_RE's lookahead needs unless an Error/Exception
_PAIR_RE = re.compile(r"(?<![\S])([a-z][\w\-]*[a-z0-9])/([a-z][\w\-]*[a-z0-9])(?![\w/\-]|\.\w)")

_ALPHA_WORD_RE = re.compile(r"(?<![\w\-./@$])[^\W\d_]+(?![\w\-/@]|\.\w)")
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
_STOP_WORDS = _words(
    """a an the and or but if then than to of in on at by for with from as is are was were be
    been being it its this that these those before after first when while until so not no do
    does did done can could should would will shall may might must also only just again"""
)
_VERBS = _words(
    """let lets run ran runs say said says see saw seen use used uses make made makes try tried
    tries need needs want wants fix fixes add adds check checks get got gets go went goes gone
    look looks know knew think thought find found work works show shows start starts stop stops
    keep kept put set sets call calls create creates update updates remove removes read reads
    write wrote written move moves change changes give gave take took come came help helps pass
    passes fail fails break broke broken build built install return returns seem seems mean means
    meant allow allows ensure verify confirm implement handle handles include includes contain
    contains provide provides like likes done doing does did appear appears happen happens
    happened wait waits ask asks tell tells told note let's sure okay ok yes yeah thanks please
    perfect great good now also still already just really actually maybe probably instead"""
)
_GENERIC_WORDS = _words(
    """session end goal thing way time user issue problem question answer line file code
    change test item step part case point place today yesterday tomorrow lot bit kind sort type
    example result output input value number name version task work idea summary start level
    side approach option reason something anything nothing everything stuff fact detail people
    project system first second last next new old same other different main current whole full
    right left wrong true false simple easy hard best better able available possible agent
    existing according following remaining missing pending using including chosen given feat
    chore refactor docs error tool via"""
)
_DETERMINERS = _words("the a an this that our your their its my his her")
_STDLIB = frozenset(n for n in sys.stdlib_module_names if not n.startswith("_")) - _words(
    "this test site code types string select signal token keyword random time copy abc"
)
_TRAIL_PUNCT = ".,;:!?)]}'\">`*"


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def _line_before(text: str, pos: int, limit: int = 60) -> str:
    """The text on the same line just before ``pos`` (at most ``limit`` characters)."""
    nl = text.rfind("\n", max(0, pos - limit), pos)
    return text[(nl + 1 if nl >= 0 else max(0, pos - limit)) : pos]


def _trim_url(url: str) -> str:
    """Strip trailing punctuation from a URL, keeping balanced closing brackets."""
    while url and url[-1] in _TRAIL_PUNCT:
        if url[-1] == ")" and url.count("(") >= url.count(")"):
            break
        url = url[:-1]
    return url


@lru_cache(maxsize=65536)
def _pypi_norm(name: str) -> str:
    """Normalise a package name: lowercase, and PEP 503 separators for plain names."""
    low = name.lower().strip("\"'")
    if "/" in low or low.startswith("@") or ":" in low:
        return low
    return re.sub(r"[-_.]+", "-", low)


@lru_cache(maxsize=65536)
def _is_camel(word: str) -> bool:
    """True for CamelCase with two or more humps or camelCase (not acronyms, brands, base64)."""
    if word in BRANDS or len(word) < 3 or not any(c.islower() for c in word):
        return False
    if re.fullmatch(r"[A-Z]{2,}(?:s|es|ed|er|ers|ing|ings)|[A-Z][a-z0-9]+|[a-z]{1,2}[A-Z]{2,}[a-z]?", word):
        return False
    if len(re.findall(r"\d+", word)) >= 2 and len(word) >= 10:
        return False
    return bool(re.search(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]", word))


@lru_cache(maxsize=65536)
def _is_known_package(word: str) -> bool:
    """True for a well-known package name that rarely means anything else in prose."""
    low = word.lower()
    if word in BRANDS or low in NOT_PACKAGES or low in AMBIGUOUS_PACKAGES or word.isupper():
        return False
    if _pypi_norm(low) in KNOWN_PACKAGES or low in KNOWN_PACKAGES:
        return True
    return low == word and "-" in low and (low.startswith(PACKAGE_PREFIXES)
                                           or low.endswith(PACKAGE_SUFFIXES))


def _maybe_package(low: str) -> bool:
    """Cheap pre-check: a lowercase word that could be a lexicon package or a prefixed plugin."""
    return (low in _LEXICON or low.replace("_", "-") in _LEXICON or low.startswith(PACKAGE_PREFIXES)
            or low.endswith(PACKAGE_SUFFIXES))


@lru_cache(maxsize=65536)
def _env_like(name: str) -> bool:
    """True for an UPPER_SNAKE name that looks like an environment variable on its own."""
    if name in ENV_WELL_KNOWN or name in _GO_ENV and "go-env" not in _SHAPES_OFF:
        return True
    if name in ENV_CONTEXT_ONLY:
        return False
    return "_" in name and (name.endswith(ENV_SUFFIXES) or name.startswith(ENV_PREFIXES))


def _symbol_norm(name: str) -> str:
    """Normalise a symbol: drop ``()``, a leading dot and a ``self.``/``cls.``/``this.`` owner."""
    name = name.strip("`").lstrip(".")
    name = name.removesuffix("()")
    for owner in ("self.", "cls.", "this."):
        if name.startswith(owner) and len(name) > len(owner):
            return name[len(owner) :]
    return name


def _local_host(host: str) -> str:
    """Map loopback/any addresses to ``localhost``."""
    return "localhost" if host in ("127.0.0.1", "0.0.0.0", "::1", "[::1]") else host.lower()


def _url_norm(url: str) -> str:
    """Normalise a URL: local endpoints to ``host:port``, others without scheme or trailing ``/``."""
    m = re.match(
        r"^(?:[a-z][a-z0-9+.\-]*://)?(?:[^@/\s]*@)?([^/:?#\s]+)(:\d+)?(.*)$", url, re.IGNORECASE
    )
    if not m:
        return url
    host, port, rest = _local_host(m.group(1)), m.group(2) or "", m.group(3)
    if host == "localhost":
        return host + port
    return (host + port + rest.split("#", 1)[0]).rstrip("/")


# ---------------------------------------------------------------------------------------------
# Scanners: each yields candidates for one family of kinds
# ---------------------------------------------------------------------------------------------


_GIT_REF_PREFIXES = ("refs/", "@", "origin/", "upstream/", "remotes/", "heads/", "tags/")


@lru_cache(maxsize=65536)
def _classify_path(path: str, after: str) -> bool:
    """Decide whether a path-like word is a file reference."""
    if not re.search(r"[A-Za-z]", path) or "://" in path or path in (".", "..", "./..."):
        return False
    base = path.rstrip("/").rsplit("/", 1)[-1]
    if path.startswith(("./", "../", "~/", "/", "@/")) and len(path) > 2:
        return not path.startswith("//") and re.search(r"[A-Za-z]{2}", path) is not None
    if base in EXTENSIONLESS_FILES or base in DOTFILES or base.startswith(".env"):
        return True
    if re.fullmatch(r"(?:\.[a-z0-9]{1,5}){2,3}", path) and path.rsplit(".", 1)[-1] in FILE_EXTS:
        return False  # extensions, not a file: `.tar.gz`
    if "/" in path and "*" in path and re.search(r"[A-Za-z]{2}", path):
        return True
    if path.endswith("/") and "@" not in path and not path.startswith("@"):
        return re.fullmatch(r"[\w.\-]+(?:/[\w.\-]+)*/", path) is not None
    if "/" in path:
        first = path.split("/", 1)[0]
        if re.match(r"[a-z0-9\-]+\.[a-z]{2,}$", first) or path.startswith(_GIT_REF_PREFIXES):
            return False
        if (
            path.count("/") >= 2
            or first in DIR_HINTS
            or any(seg.startswith(("_", ".")) for seg in path.split("/"))
        ):
            return True
    stem, dot, ext = base.rpartition(".")
    if not dot or not stem.strip(".") or ext not in FILE_EXTS or after.startswith("("):
        return False
    if base in JS_BRANDS or (stem in ATTR_OWNERS and "/" not in path):
        return False
    return not (ext in _AMBIG_EXTS and "/" not in path)


def _scan_files(text: str) -> Iterator[_Cand]:
    """File paths, filenames, dotfiles and known extensionless names."""
    for m in _NAMED_FILE_RE.finditer(text) if _Has(text)(*_NAMED_FILE_NEEDLES) else ():
        line = m.group("line") or ""
        yield _Cand("file", m.start(), m.end("path"), m.group("path"), line.lstrip(":"))
    if "." not in text and "/" not in text and "\\" not in text:
        return
    for m in _PATH_RE.finditer(text):
        path, line = m.group("path"), m.group("line") or ""
        start = m.start("path")
        while path and path[-1] in ".,;:!?" and not path.endswith(("./", "..")):
            path, line = path[:-1], ""
        if path.startswith(".") and not path.startswith(("./", "../", ".")):
            continue
        if not path or path.rstrip("/") in EXTENSIONLESS_FILES:
            continue
        end = start + len(path)
        paren = _PAREN_LOCATION_RE.match(text, end) if not line else None
        if paren:
            line = ":" + paren.group(1).replace(",", ":")
        if _DATE_PATH_RE.fullmatch(path) or not _classify_path(path, "" if paren else text[end : end + 1]):
            continue
        norm = path.removeprefix("./")
        norm = norm.rstrip("/") or norm
        yield _Cand("file", start, end, norm, line.lstrip(":"))
    for m in _DRIVE_PATH_RE.finditer(text) if ":/" in text else ():
        yield _Cand("file", m.start(), m.end(), m.group(0))
    for m in _PROMPT_DIR_RE.finditer(text) if "@" in text else ():
        yield _Cand("file", m.start("dir"), m.end("dir"), m.group("dir").rstrip("/") or "/")
    for m in _WINPATH_RE.finditer(text) if ":\\" in text else ():
        p = m.group(0).rstrip(".,;:")
        yield _Cand("file", m.start(), m.start() + len(p), p.replace("\\", "/"))
    for m in _ARG_FILE_RE.finditer(text) if "=" in text or ">" in text else ():
        if not _VERSIONISH_RE.search(m.group("path")):
            yield _Cand("file", m.start("path"), m.end("path"), m.group("path"))
    for m in _BACKSLASH_PATH_RE.finditer(text) if "\\" in text else ():
        yield _Cand("file", m.start(), m.end(), m.group(0).replace("\\", "/"))


def _scan_urls(text: str) -> Iterator[_Cand]:
    """Scheme URLs, git remotes, host:port, IPv4, bare domains, ports and route paths."""
    has_dot, has_colon = "." in text, ":" in text
    url_rx = _URL_RE if "md-url" in _SHAPES_OFF or "](" not in text else _URL_8_RE
    for m in url_rx.finditer(text) if "://" in text else ():
        url = _trim_url(m.group(0))
        if len(url) > len(url.split("://", 1)[0]) + 3:
            yield _Cand("url", m.start(), m.start() + len(url), _url_norm(url))
    for m in _GIT_SSH_RE.finditer(text) if "git@" in text else ():
        url = _trim_url(m.group(0))
        yield _Cand("url", m.start(), m.start() + len(url), url)
    for m in _HOSTPORT_RE.finditer(text) if has_colon else ():
        host = m.group("host")
        if "." in host and not host[0].isdigit() and host.rsplit(".", 1)[-1] not in TLDS:
            continue
        path = _trim_url(m.group("path") or "")
        end = m.end("port") + len(path)
        yield _Cand("url", m.start(), end, _local_host(host) + m.group("port"))
    if has_dot:
        yield from _scan_domains(text)
    for m in _PORT_WORD_RE.finditer(text) if "ort" in text else ():
        yield _Cand("url", m.start(), m.end(), ":" + m.group(1))
    for m in _BARE_PORT_RE.finditer(text) if has_colon else ():
        yield _Cand("url", m.start(1), m.end(1), m.group(1))
    for m in _ROUTE_RE.finditer(text) if "/" in text else ():
        path = _trim_url(m.group(1))
        if len(path) > 1:
            yield _Cand("url", m.start(1), m.start(1) + len(path), path)


_API_GROUP_RE = re.compile(r"apiVersion:[ \t]*$")
_KUBECTL_DONE_RE = re.compile(r"[ \t]+(?:created|configured|unchanged|deleted|patched)\b")


# round 7: a Go function by its import path, in a panic's frame or "created by" line:
# `github.com/spf13/cobra.(*Command).ExecuteC(0x…)`, `created by github.com/x/gaper.(*runner).runBin`,
# a frame line `github.com/Southclaws/sampctl/runtime.run.func5`; a symbol, not a URL
_GO_FUNC_RE = re.compile(
    r"(?<![\w/.\-])(?P<name>[a-z0-9][\w\-]*(?:\.[\w\-]+)*\.[a-z]{2,}(?:/[\w.\-]+)*/[\w\-]+"
    r"\.(?:\(\*?[A-Za-z_]\w*\)\.)?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?P<end>\(|[ \t]*$)", re.MULTILINE)


_GO_HINT_RE = re.compile(r"\.[a-z]{2,}/[^\s]*\.[\w(]")
_go_cache: list = [None, []]


def _go_funcs(text: str) -> list[re.Match[str]]:
    """Go functions by import path: followed by their call's parenthesis, with a receiver, or alone on a line
    (the domain and the symbol scanners both ask; the last text's answer is kept)."""
    if _go_cache[0] is text:
        return _go_cache[1]
    found = []
    for m in _GO_FUNC_RE.finditer(text) if "go-func" not in _SHAPES_OFF and _GO_HINT_RE.search(text) else ():
        name = m.group("name")
        alone = text[text.rfind("\n", 0, m.start()) + 1 : m.start()].strip() in ("", "created by")
        if m.group("end") == "(" or ".(" in name or alone and name.rsplit(".", 1)[1] not in FILE_EXTS:
            found.append(m)
    _go_cache[:] = [text, found]
    return found


def _scan_domains(text: str) -> Iterator[_Cand]:
    """Bare domain names with a known top-level domain, optionally with a path."""
    go = [m.span("name") for m in _go_funcs(text)]
    for m in _DOMAIN_RE.finditer(text) if "." in text else ():
        if go and any(a <= m.start() < z for a, z in go):
            continue
        dom, tld = m.group("dom"), m.group("tld")
        labels = dom.split(".")
        if tld not in TLDS or labels[0] in ATTR_OWNERS or dom in NOT_DOTTED:
            continue
        if tld in _WEAK_TLDS and len(labels) < 3:
            continue
        rest = _trim_url(m.group("rest") or "")
        end = m.start("dom") + len(dom) + len(rest)
        if rest and _API_GROUP_RE.search(text, max(0, m.start() - 13), m.start()) or (
                rest and _KUBECTL_DONE_RE.match(text, end)):
            continue  # a Kubernetes API group (apiVersion: networking.k8s.io/v1, x.rbac...io/name created)
        yield _Cand("url", m.start(), end, (dom + rest).rstrip("/"), weak=True)


def _scan_commits(text: str) -> Iterator[_Cand]:
    """Git SHAs: 7-40 lowercase hex with a digit and a letter, outside hash/digest contexts."""
    for m in _COMMIT_OUTPUT_RE.finditer(text) if "[" in text else ():
        yield _Cand("commit", m.start(1), m.end(1), m.group(1))
    for m in _COMMIT_RE.finditer(text) if _HEX7_RE.search(text) else ():
        sha = m.group(1)
        before = _line_before(text, m.start(), 50)
        after_word = _COMMIT_WORD_RE.search(before[-20:]) is not None
        if not re.search(r"[a-f]", sha):
            continue
        if not after_word and (not re.search(r"\d", sha) or len(sha) == 32):
            continue
        if not after_word and _HASH_CONTEXT_RE.search(before) and "commit" not in before.lower():
            continue
        if text[m.start() - 1 : m.start()] == "=" and "kv-hex" not in _SHAPES_OFF:
            k = _KV_KEY_RE.search(text, max(0, m.start() - 41), m.start())
            if k is not None and k.group("key").lower() not in _SHA_KEYS:
                continue  # round 8 "kv-hex": `runner=d87fcd19`, `PublicKeyToken=7cec85d7bea7798e`, `logid=60bb2ae8`
        yield _Cand("commit", m.start(1), m.end(1), sha.lower())


def _exc_detail(text: str, end: int) -> str:
    """The message following ``Name:`` on the same line, if any."""
    m = _MSG_RE.match(text, end)
    return m.group(1).strip() if m else ""


def _scan_errors(text: str) -> Iterator[_Cand]:
    """Exceptions, error codes, HTTP statuses, exit codes, signals and advisories."""
    has = _Has(text)
    for m in _EXC_RE.finditer(text) if has("Error", "Exception", "Warning", "Interrupt") else ():
        name = m.group("name")
        base = name.rsplit(".", 1)[-1]
        if base in ("Error", "Exception", "Warning", "Errors", "Exceptions", "Warnings"):
            continue
        norm = base[:-1] if m.group("plural") else base
        yield _Cand("error", m.start(), m.end(), norm, _exc_detail(text, m.end()))
    for m in _TRACEBACK_HEAD_RE.finditer(text) if ":" in text else ():
        name = m.group("name")
        base = name.rsplit(".", 1)[-1]
        headed = "." in name or "::" in name or _is_camel(base) or base in BUILTIN_EXCEPTIONS
        if headed and base not in BRANDS:
            msg = (m.group("msg") or "").strip()
            yield _Cand("error", m.start("name"), m.end("name"), base, msg)
    for m in _RUBY_UNCAUGHT_RE.finditer(text) if "in `" in text else ():
        yield _Cand("error", m.start("name"), m.end("name"), m.group("name").rsplit("::", 1)[-1])
    for m in (
        _EXC_MODULE_RE.finditer(text) if has(".errors.", ".exceptions.", ".exc.", ".error.") else ()
    ):
        yield _Cand("error", m.start(), m.end(), m.group("name").rsplit(".", 1)[-1])
    low = text.lower()
    ctx = ("rais", "throw", "catch", "caught", "except")
    for rx in (_RAISE_CTX_RE, _EXC_WORD_RE) if any(w in low for w in ctx) else ():
        for m in rx.finditer(text):
            base = m.group("name").rsplit(".", 1)[-1]
            if base not in BRANDS and base not in _NOT_CLASSES and base.lower() not in _STOP_WORDS:
                yield _Cand("error", m.start("name"), m.end("name"), base)
    for m in (
        _BUILTIN_EXC_RE.finditer(text) if has("Interrupt", "Exit", "Stop", "Exception") else ()
    ):
        yield _Cand("error", m.start(), m.end(), m.group(0))
    yield from _scan_error_codes(text, has)
    if has("xit", "XIT", "non-zero", "rror code") or ("4" in text or "5" in text) and _HTTP_NUM_RE.search(text):
        yield from _scan_http_and_exit(text)


def _scan_error_codes(text: str, has: Callable[..., bool]) -> Iterator[_Cand]:
    """Errno names, node/rustc/tsc/linter/Oracle codes, signals, CVEs and k8s error states."""
    for m in _CODES_AFTER_ERROR_RE.finditer(text) if has("rror", "arning", "RROR", "--explain") else ():
        for c in re.finditer(r"[A-Z]{1,4}\d{3,5}", m.group("codes")):
            yield _Cand("error", m.start("codes") + c.start(), m.start("codes") + c.end(), c.group(0))
    for m in _CAUGHT_TUPLE_RE.finditer(text) if has("except", "rescue", "catch") else ():
        for n in re.finditer(r"(?:[a-z_]\w*\.)*[A-Z]\w+", m.group("names")):
            at = m.start("names") + n.start()
            yield _Cand("error", at, at + len(n.group(0)), n.group(0).rsplit(".", 1)[-1])
    for m in _CHECKER_RULE_RE.finditer(text) if "(report" in text else ():
        yield _Cand("error", m.start("rule"), m.end("rule"), m.group("rule"))
    for m in _ERRNO_RE.finditer(text) if "E" in text else ():
        code = m.group(1)
        if code in ERRNO_NAMES or code.startswith("ERR_"):
            yield _Cand("error", m.start(1), m.end(1), code)
    gated = (
        (_SIGNAL_RE, has("SIG")),
        (_STATE_RE, has("Off", "Kill", "Err", "Container", "Invalid")),
        (_ORA_RE, "-" in text),
        (_GHSA_RE, has("GHSA")),
        (_TS_RE, has("TS")),
    )
    for rx, ok in gated:
        for m in rx.finditer(text) if ok else ():
            if rx is not _SIGNAL_RE or m.group(0) in SIGNALS:
                norm = m.group(0) if rx is _STATE_RE else m.group(0).upper()
                yield _Cand("error", m.start(), m.end(), norm)
    for m in _CVE_RE.finditer(text) if has("CVE") else ():
        yield _Cand("error", m.start(), m.end(), m.group(0).replace(" ", "-").upper())
    for m in _SEGV_RE.finditer(text) if has("egmentation", "EGMENTATION") else ():
        yield _Cand("error", m.start(), m.end(), "segmentation fault")
    coded_ok = _LETTER_DIGITS_RE.search(text) is not None  # a lint or compiler code needs [A-Z]\d{3}
    coded = (
        (_RUSTC_RE, "[E" in text),
        (_LINT_RE, coded_ok),
        (_CODE_AFTER_ERR_RE, coded_ok),
        (_SSL_CODE_RE, "[SSL" in text),
        (_TLS_CODE_RE, "_" in text),
    )
    for rx, ok in coded:
        for m in rx.finditer(text) if ok else ():
            if rx is _LINT_RE and not _LINT_CTX_RE.search(text, max(0, m.start() - 12), m.start()):
                continue
            g = 1 if m.group(1) else 2
            yield _Cand("error", m.start(g), m.end(g), m.group(g))
    for m in _ERRNO_NUM_RE.finditer(text) if has("rrno", "rror ", "RROR ", "WinError") else ():
        g = 1 if m.group(1) else 2
        word, num = m.group(g).split()
        yield _Cand("error", m.start(g), m.end(g), f"{word.lower()} {num}")


class _Has:
    """Cheap substring gate: ``has("a", "b")`` is true if any needle occurs in the text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        """Remember the text to search."""
        self.text = text

    def __call__(self, *needles: str) -> bool:
        """True if any needle is a substring of the text (a loop: no generator per call, ~25 calls per text)."""
        text = self.text
        for n in needles:
            if n in text:
                return True
        return False


def _scan_http_and_exit(text: str) -> Iterator[_Cand]:
    """HTTP 4xx/5xx statuses and process exit codes."""
    for rx in (_HTTP_PREFIX_RE, _HTTP_REASON_RE):
        for m in rx.finditer(text):
            yield _Cand("error", m.start(), m.end(), "HTTP " + m.group("n"))
    for m in list(_HTTP_CTX_RE.finditer(text)) + list(_HTTP_RETURNED_RE.finditer(text)):
        yield _Cand("error", m.start("n"), m.end("n"), "HTTP " + m.group("n"))
    for m in _ACCESS_LOG_RE.finditer(text) if " HTTP/" in text else ():
        yield _Cand("error", m.start("n"), m.end("n"), "HTTP " + m.group("n"))
    for m in _EXIT_RE.finditer(text):
        yield _Cand("error", m.start("t"), m.end("t"), "exit " + m.group("n"))
    for m in _RETURNED_EXIT_RE.finditer(text) if " exit status" in text and "ld-exit" not in _SHAPES_OFF else ():
        yield _Cand("error", m.start("t"), m.end("t"), "exit " + m.group("n"))  # round 7: ld's wording


def _symbol_ok(name: str) -> bool:
    """Reject dotted names that are abbreviations, brands, versions or env accessors."""
    core = name.removesuffix("()")
    if core in NOT_DOTTED or core in JS_BRANDS or _ENV_ACCESSOR_SYMBOL_RE.match(core) and not (
            core.startswith("os.") and "env-accessor" not in _SHAPES_OFF):  # round 7: Python's are code
        return False
    if re.fullmatch(r"[A-Za-z]+\d+(?:\.(?:\d+|x|X))+", core):
        return False
    parts = re.split(r"\.|::|:", core)
    if len(parts) >= 3 and all(len(p) == 1 for p in parts[:-1]):
        return False  # an abbreviated logger name: `c.c.a.m.AgentManagerImpl`
    return not all(len(p) <= (1 if len(parts) < 4 else 2) for p in parts)


_SHOUTED_RE = re.compile(r"[A-Z]{2,}(?:\.[A-Z]{2,})+")


def _scan_symbols(text: str) -> Iterator[_Cand]:
    """Code-looking names, minus those their surroundings show are not code (see ``_not_code``)."""
    blocked = _not_code_spans(text)
    for c in _symbol_candidates(text):
        word = text[c.start : c.end]
        if (c.start, c.end) in blocked or word.lower() in _KEYWORDS or len(word.strip("_()")) < 2:
            continue
        if "keywords" not in _SHAPES_OFF and (word in _vocab.C_TYPES or word.removesuffix("()") in _vocab.CALL_KEYWORDS
                                              and (word.endswith("()") or text.startswith("(", c.end))):
            continue
        if _SHOUTED_RE.fullmatch(word):
            continue  # capitals run together at a full stop: "AGAIN.THAT WORKED"
        if _PRODUCT_AFTER_RE.match(text, c.end) and "." not in word and "_" not in word:
            continue  # a product and its version: `AppleWebKit/537.36`, `LoopBack 4`
        yield c


# a .NET / JVM frame with its signature: `at Ns.Cls.Invoke(HttpContext httpContext)`; the
# parameter names after their types are the frame's locals, not names to link
_TYPED_FRAME_RE = re.compile(r"(?m)^\W*(?:##\[debug\][ \t]*)?at[ \t]+[\w.$<>`]+\((?P<params>[^()\n]+)\)")
_TYPED_PARAM_RE = re.compile(r"[\w.<>\[\]`,]+[ \t]+([A-Za-z_]\w*)[ \t]*(?:,|$)")


def _not_code_spans(text: str) -> set[tuple[int, int]]:
    """Spans of names that sit where code does not: container names (``api_1``, heading compose
    log lines), XML tag names, markdown emphasis underscores, emoji codes (``:white_check_mark:``),
    locales, CPU architectures, config directives (``uwsgi_pass ...;``), status values and event
    reasons (``Warning  FailedMount``), products after their vendor, and the keys of
    ``key=value`` log output (two or more on a line)."""
    spans: set[tuple[int, int]] = set()
    for rx, group, required, cues in _NOT_CODE_RES:
        if required in text and (not cues or any(c in text for c in cues)):
            spans.update(m.span(group) for m in rx.finditer(text))
    emphasis = " _" in text or "\n_" in text or text.startswith("_")
    for m in _WORD_EMPHASIS_RE.finditer(text) if emphasis and "emphasis" not in _SHAPES_OFF else ():
        spans.add(m.span())
    for m in _MAKE_TARGET_RE.finditer(text) if "*** [" in text and "make-target" not in _SHAPES_OFF else ():
        spans.add(m.span(1))
    for m in _MIX_TASK_RE.finditer(text) if "mix " in text and "mix-task" not in _SHAPES_OFF else ():
        spans.add(m.span(1))
    gradle = ":" in text and _Has(text)("ask", "configuration", "FAILED", "UP-TO-DATE", "NO-SOURCE", "SKIPPED", "FROM-CACHE")
    for m in _GRADLE_PATH_RE.finditer(text) if gradle and "gradle-path" not in _SHAPES_OFF else ():
        if m.group("task"):
            spans.add(m.span("task"))
            continue
        spans.update((m.start("path") + g.start(), m.start("path") + g.end())
                     for g in _GRADLE_SEGMENT_RE.finditer(m.group("path")))
    for m in _EMPHASIS_RE.finditer(text) if emphasis else ():
        first, last = m.group(0).split()[0], m.group(0).split()[-1]
        spans.add((m.start(), m.start() + len(first)))
        spans.add((m.end() - len(last.lstrip("\"'(.")), m.end()))
    lines: dict[int, list[tuple[int, int]]] = {}  # keys by the offset of their line's start
    for m in _LOGFMT_KEY_RE.finditer(text) if "=" in text else ():
        lines.setdefault(text.rfind("\n", 0, m.start()), []).append(m.span(1))
    spans.update(span for keys in lines.values() if len(keys) > 1 for span in keys)
    for m in _TYPED_FRAME_RE.finditer(text) if "at " in text else ():
        spans.update((m.start("params") + p.start(1), m.start("params") + p.end(1))
                     for p in _TYPED_PARAM_RE.finditer(m.group("params")))
    return spans


_PROGRAM_NAMES = PLAIN_EXECUTABLES | _TASK_RUNNERS | _words("git npm pnpm yarn pip pip3 uv cargo docker kubectl")


def _symbol_candidates(text: str) -> Iterator[_Cand]:
    """Calls, dotted names, camel/snake identifiers, ``.attr`` references and kwargs."""
    has_dot = "." in text or "::" in text
    for m in _CALL_RE.finditer(text) if "(" in text else ():
        name = m.group("name")
        empty = m.group("paren") == "()"
        if not empty and not _call_with_args_ok(name, text, m.end()):
            continue
        end = m.end() if empty else m.end("name")
        if _symbol_ok(name):
            yield _Cand("symbol", m.start(), end, _symbol_norm(text[m.start() : end]))
    for m in _DOTTED_RE.finditer(text) if has_dot else ():
        name = m.group("name")
        head, sep, node = name.partition("::")
        if sep and "." in head and head.rsplit(".", 1)[1] in FILE_EXTS:  # a test id: `a.py::T::t`
            yield _Cand("symbol", m.start() + len(head) + 2, m.end(), node)
        elif _symbol_ok(name) and not _DOMAIN_NAME_RE.fullmatch(name):
            yield _Cand("symbol", m.start(), m.end(), _symbol_norm(name))
    for m in _LEADING_DOT_RE.finditer(text) if has_dot else ():
        dotted = "." + m.group("name")
        if dotted not in DOTFILES and not dotted.startswith(".env") and m.group("name") not in FILE_EXTS:
            yield _Cand("symbol", m.start("name"), m.end(), m.group("name"))
    for m in _CAMEL_RE.finditer(text):
        if _is_camel(m.group(1)):
            bare = m.group(1)[0].isupper() and not _CODE_WORD_AFTER_RE.match(text, m.end()) and not (
                _CODE_WORD_BEFORE_RE.search(text, max(0, m.start() - 26), m.start()))
            yield _Cand("symbol", m.start(), m.end(), m.group(1), weak=bare)
    for m in _WORD_EMPHASIS_RE.finditer(text) if "_" in text and "emphasis" not in _SHAPES_OFF else ():
        if "_" in m.group(1):
            yield _Cand("symbol", m.start(1), m.end(1), m.group(1))
    for m in _SNAKE_RE.finditer(text) if "_" in text else ():
        word = m.group(1)
        if any(c.islower() for c in word) and word.strip("_"):
            yield _Cand("symbol", m.start(), m.end(), word)
    for rx, ok in (
        (_HASH_METHOD_RE if "ruby-ns" in _SHAPES_OFF else _NS_HASH_METHOD_RE, "#" in text),
        (_KWARG_RE, "=" in text),
        (_FRAME_RE, 'File "' in text),
        (_JVM_FRAME_RE, "$" in text and "at " in text),
        (_RUBY_BLOCK_RE, "`block in" in text or "`block (" in text),
        (_UNDEFINED_RE, "undefined:" in text),
    ):
        for m in rx.finditer(text) if ok else ():
            if m.group(1) != "<module>":
                yield _Cand("symbol", m.start(1), m.end(1), _symbol_norm(m.group(1)))
    for m in _BACKTICK_RE.finditer(text) if "`" in text else ():
        g = 1 if m.group(1) is not None else 2
        b = _BACKTICK_SYMBOL_RE.fullmatch(m.group(g))
        ext = (m.group(g).startswith(".") and b is not None
               and all(part in FILE_EXTS for part in b.group("name").split(".")))
        if b and b.group("name") in _PROGRAM_NAMES:
            continue  # `make`, `rsync`: a program, run (a command) or named, never a code name
        if b and not ext and (_symbol_ok(b.group("name")) or b.group("name").isidentifier()):
            start = m.start(g) + b.start("name")
            yield _Cand(
                "symbol", start, start + len(b.group("name")), _symbol_norm(b.group("name"))
            )
    for m in _go_funcs(text):
        yield _Cand("symbol", m.start("name"), m.end("name"), m.group("name"))
    for m in _LOGGER_NAME_RE.finditer(text) if "logger-name" not in _SHAPES_OFF and _LOGGER_HINT_RE.search(text) else ():
        yield _Cand("symbol", m.start("name"), m.end("name"), m.group("name"))
    for m in _MISSING_MEMBER_RE.finditer(text) if _Has(text)("attribute", "does not exist", "Cannot read", "(reading") and (
            "member-missing" not in _SHAPES_OFF) else ():
        for member in ("a", "p", "t", "j", "k"):
            if m.group(member) and m.group(member) not in _TS_PRIMITIVES:
                yield _Cand("symbol", m.start(member), m.end(member), _symbol_norm(m.group(member)))
    for m in _OBJ_RE.finditer(text) if _Has(text)(" object", " class", " instance") else ():
        if m.group("name") not in _NOT_CLASSES:
            yield _Cand("symbol", m.start("name"), m.end("name"), m.group("name"))
    yield from _round8_symbols(text)
    for rx, ok in ((_RUBY_QUOTE_RE, "`" in text), (_QUOTED_NAME_RE, _Has(text)("ame ", "Type of", "ariable ", "Class ", "Interface ", "Trait ")),
                   (_NAMESPACE_RE, "\\" in text),
                   (_ARROW_CALL_RE, "->" in text), (_UNRESOLVED_RE, "Unresolved reference" in text),
                   (_ARITY_RE, "/" in text and _SLASH_DIGIT_RE.search(text) is not None)):
        for m in rx.finditer(text) if ok else ():
            yield _Cand("symbol", m.start("name"), m.end("name"), m.group("name"))


def _round8_symbols(text: str) -> Iterator[_Cand]:
    """Round 8's symbol shapes (see ``_QUOTED_TYPE_RE`` and the shapes after it)."""
    off = _SHAPES_OFF
    for m in _QUOTED_TYPE_RE.finditer(text) if ("object" in text or "Type " in text) and "quoted-type" not in off else ():
        g = m.lastgroup or "a"
        if m.group(g) not in _BUILTIN_TYPES:
            yield _Cand("symbol", m.start(g), m.end(g), m.group(g))
    for m in _GENERATED_FRAME_RE.finditer(text) if ".<" in text and "generated-frame" not in off else ():
        yield _Cand("symbol", m.start("name"), m.end("name"), _symbol_norm(m.group("name")))
    for m in _RUBY_PREDICATE_RE.finditer(text) if ("?" in text or "!" in text) and "ruby-predicate" not in off else ():
        g = m.lastgroup or "a"
        yield _Cand("symbol", m.start(g), m.end(g), m.group(g))
    for m in _NAME_UNDEFINED_RE.finditer(text) if "name " in text and "name-undefined" not in off else ():
        g = m.lastgroup or "a"
        yield _Cand("symbol", m.start(g), m.end(g), m.group(g))
    for m in _IMPORT_BINDS_RE.finditer(text) if "import" in text and "import-binds" not in off else ():
        g = m.lastgroup or "names"
        for part in re.finditer(r"[A-Za-z_$][\w$]*", m.group(g)):
            yield _Cand("symbol", m.start(g) + part.start(), m.start(g) + part.end(), part.group(0))
    for m in _QUOTED_IMPORT_RE.finditer(text) if "import" in text and "import-binds" not in off else ():
        for part in re.finditer(r"[A-Za-z_]\w*", m.group("names") or ""):
            yield _Cand("symbol", m.start("names") + part.start(), m.start("names") + part.end(), part.group(0))


_COMMIT_TYPES = _words("feat fix chore docs refactor test tests perf build ci style revert")


def _call_with_args_ok(name: str, text: str, pos: int) -> bool:
    """Accept ``name(args`` only when it looks like code, not prose like ``type(s)``."""
    if re.match(r"(?:s|es|S)\)", text[pos : pos + 3]):
        return False
    if name.isupper():
        return False
    if name.lower() in _COMMIT_TYPES and re.match(r"[^()\n]*\)!?:[ \t]", text[pos:]):
        return False  # a conventional commit's type and scope: `fix(parser): …`
    return bool(re.match(r"[\w\"'*\[{<.]|\)|:[a-z]", text[pos : pos + 2]))  # `:normal`: an Elixir atom


def _scan_envvars(text: str) -> Iterator[_Cand]:
    """Environment variables from references, assignments, accessors and context."""
    for m in _ENV_REF_RE.finditer(text) if "$" in text else ():
        name = m.group("b") or m.group("s")
        if name == "this" and text.startswith("->", m.end()):
            continue  # PHP's `$this->`
        if not name.isdigit():
            yield _Cand("envvar", m.start(), m.end(), name)
    for m in _ENV_ASSIGN_RE.finditer(text) if "=" in text else ():
        yield _Cand("envvar", m.start("name"), m.end("name"), m.group("name"))
    low = text.lower()
    for m in _ENV_ACCESS_RE.finditer(text) if "env" in low or "ENV" in text else ():
        g = "a" if m.group("a") else "b"
        yield _Cand("envvar", m.start(g), m.end(g), m.group(g))
    for m in _ENV_CTX_RE.finditer(text) if "env" in low else ():
        g = "a" if m.group("a") else "b"
        name = m.group(g)
        if name.isupper() or name.endswith("_proxy"):
            yield _Cand("envvar", m.start(g), m.end(g), name)
    for m in _KEYERROR_ENV_RE.finditer(text) if "KeyError" in text else ():
        yield _Cand("envvar", m.start("n"), m.end("n"), m.group("n"))
    for m in _UPPER_SNAKE_RE.finditer(text) if "_" in text else ():
        name = m.group(1)
        # backticked, an UPPER_SNAKE name of three parts or more is a variable's (`BUILD_FAILURE_EXIT_CODE`,
        # `DATABASE_URL_ADMIN`: so is every such name of the dev sets); a shorter one may be a constant
        ticked = text[m.start() - 1 : m.start()] == "`" and text[m.end() : m.end() + 1] == "`" and (
            name.count("_") >= 2)
        kind = "envvar" if ticked or _env_like(name) else "symbol"
        if kind == "symbol" and text[m.start() - 1 : m.start()] in ("[", "(") and (
                text[m.end() : m.end() + 1] in ("]", ")")):
            continue  # a bracketed tag or token label: `[BUG_FIX]`, PHP's `(T_STRING)`
        yield _Cand(kind, m.start(), m.end(), name)
    known = ENV_WELL_KNOWN if "go-env" in _SHAPES_OFF else _ENV_KNOWN_8
    if not known.isdisjoint(_CAPS_RE.findall(text)):
        for m in _UPPER_WORD_RE.finditer(text):
            if m.group(1) in known:
                yield _Cand("envvar", m.start(), m.end(), m.group(1))
    for m in _PROXY_RE.finditer(text) if "_proxy" in text else ():
        yield _Cand("envvar", m.start(), m.end(), m.group(0))


# a version move: `upgrade PHPUnit to version 9`, "Updated `conventional-changelog` to v4 and
# `conventional-recommended-bump` to v7", "Migrate quick-error to 1.1.0", "Update ratatui to 0.30 and
# rui-tree-widget to 0.24", "downgrade of indicam-client dependence to 1.0.5": each name right before
# "to <version>" in the clause of an update verb
_MOVE_VERB_RE = re.compile(r"(?i:\b(?:updat|upgrad|downgrad|migrat)(?:e|es|ed|ing)\b|\bbump(?:s|ed|ing)?\b|\bpin(?:s|ned)?\b)")
_MOVED = (r"`?(?P<name>@?[A-Za-z][\w.\-]*(?:/[\w.\-]+)?[A-Za-z0-9])`?(?:[ \t]+(?:dependency|dependence|package|"
          r"crate|gem|module|library))?[ \t]+to[ \t]+(?:version[ \t]+)?v?\d[\w.\-]*")
_MOVED_NAME_RE = re.compile(r"[ \t]+(?:(?:of|the)[ \t]+)*" + _MOVED)
_MOVED_NEXT_RE = re.compile(r"(?:,[ \t]*(?:and[ \t]+)?|[ \t]+and[ \t]+)" + _MOVED)
_NOT_MOVED = _words("version versions it them all deps dependencies everything this that which and or the of "
                    "packages package libraries modules")
# prose that installs a list of names: "when I install detectron2, pointnet2 and sphericalmap_utils",
# "make sure to install express, not just express-http-proxy", "try reinstalling flask or updating"
_PROSE_INSTALL_RE = re.compile(r"(?<![\w\-])(?:re)?install(?:ing)?[ \t]+")
_PROSE_PKG = r"(?P<name>[a-z][a-z0-9]*(?:[\-_.][a-z0-9]+)*)(?![\w\-/@]|\.\w)"
_PROSE_PKG_RE = re.compile(_PROSE_PKG)
_PROSE_NEXT_RE = re.compile(r"(?:,[ \t]*(?:and[ \t]+|or[ \t]+|not just[ \t]+)?|[ \t]+(?:and|or)[ \t]+)" + _PROSE_PKG)
# a sentence about dependencies: its backticked lowercase names are packages
_DEP_SENTENCE_RE = re.compile(r"(?i)\b(?:dependenc(?:y|ies)|crates?|packages?|gems?|librar(?:y|ies)|"
                              r"fail(?:s|ed)? to build)\b")
_BARE_PKG_RE = re.compile(r"[a-z][a-z0-9]*(?:[\-_][a-z0-9]+)*")


# Round 7's structural grammars (issue #18): one per family of shapes, not one per line seen.
# a Go module path or any domain-rooted path: `github.com/dprotaso/modlog`, `gopkg.in/yaml.v3`
_MODULE_PATH = r"[a-z0-9][\w\-]*(?:\.[\w\-]+)*\.[a-z]{2,}(?:/[\w.\-]+)+"
_MODULE_PATH_RE = re.compile(_MODULE_PATH)
_PKG_NAME = r"@?[A-Za-z][\w.\-]*(?:/[\w.\-]+)*[A-Za-z0-9]"
_TICK_VER = r"`?v?\d[\w.\-]*`?"
# A manifest line, one shape per manifest (name, pattern, cue words of the lowercased text): go.mod's
# `\tgolang.org/x/oauth2 v0.5.0 // indirect`; a Gradle dependency configuration `compileOnly("g:a:v")`;
# `apply plugin: 'x'`; a gemspec's `add_development_dependency "bundler"`; Cargo.toml's
# `zi = { version = "0.1.4" }`; Maven's `maven-*-plugin`; a Bundler frame `actionpack (4.2.11.1) lib/…`;
# mix's `==> poolboy (compile)`. Each regex leads with a literal or an anchor, so it stays cheap.
_GRADLE_CONFIGS = (r"implementation|api|compileOnly|runtimeOnly|compile|testImplementation|testCompile|"
                   r"testRuntimeOnly|annotationProcessor|kapt|ksp|classpath|debugImplementation|androidTestImplementation")
_MANIFEST_SHAPES: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("go", re.compile(r"(?m)^[ \t]*(?:require[ \t]+)?(?P<name>" + _MODULE_PATH +
                      r")[ \t]+v\d+\.\d+\.\d+[\w.\-+]*[ \t]*(?://[^\n]*)?$"), (" v",)),
    ("gradle", re.compile(r"\b(?:" + _GRADLE_CONFIGS + r")[ \t]*\(?[ \t]*[\"'](?P<name>[\w.\-]+:[\w.\-]+(?::[\w.\-]+)?)"
                          r"(?=[\"'])"), ("implementation", "compileonly", "runtimeonly", "classpath", "kapt", "ksp",
                                           "annotationprocessor", "api(", "api '", 'api "', "compile(", "compile '",
                                           'compile "', "testcompile")),
    ("plugin", re.compile(r"\bapply[ \t]+plugin:[ \t]*[\"'](?P<name>[\w.\-]+)(?=[\"'])"), ("apply plugin",)),
    ("gemspec", re.compile(r"\badd_(?:development_|runtime_)?dependency[ \t(]*[\"'](?P<name>[\w.\-]+)(?=[\"'])"),
     ("_dependency",)),
    ("cargo", re.compile(r"(?m)^[ \t]*(?!version\b|edition\b|rust-version\b|name\b|python\b)(?P<name>[a-z][\w\-]*)"
                         r"[ \t]*=[ \t]*(?=\{[^}\n]*\bversion[ \t]*=|\"[\^~=<>]*\d[\w.\-]*\"[ \t]*$)"), ("=",)),
    ("maven", re.compile(r"(?<![\w.\-:/])(?P<name>maven-[a-z][a-z\-]*-plugin(?::\d[\w.\-]*\w)?)(?![\w\-])"),
     ("maven-",)),
    ("frame", re.compile(r"(?m)^[ \t]*(?P<name>[a-z][\w.\-]*) \(\d[\w.]*\) (?=(?:lib|app|bin|exe)/)"),
     (") lib/", ") app/", ") bin/", ") exe/")),
    ("mix", re.compile(r"(?m)^==> (?P<name>[a-z_]\w*)(?=[ \t]+\(compile\)|[ \t]*$)"), ("==> ",)),
)
# A dependency update: bump/update/upgrade/relax/pin/migrate/revert [the|dependency] X [dependency]
# [from] A to B, any case, backticks optional: "chore(deps): bump js-yaml from 4.1.0 to 4.1.1",
# "Update `phoenix_live_dashboard` to `0.5.3`", "Relaxed ecto dependency to 2.0", "update dependency
# semantic-release to v24.2.7", "Upgrade github.com/giantswarm/microerror v0.2.0 to v0.4.0";
# and the verb's "to X version N": "reverted back to cbapi version 1.2.0", "Revert to using Rubocop 0.54"
_UPDATE_VERB_RE = re.compile(r"(?i)\b(?:(?:updat|upgrad|downgrad|migrat|relax)(?:e|es|ed|ing)\b|bump(?:s|ed|ing)?\b|"
                             r"pin(?:s|ned)?\b|revert(?:s|ed|ing)?\b|relax(?:es|ed|ing)?\b)")
_UPDATE_CUE_RE = re.compile(r"updat|upgrad|downgrad|migrat|relax|bump|pin|revert")
_UPDATE_DEP_WORD = r"(?:dependency|dependence|dev-dependency|package|crate|gem|module|library)"
_UPDATE = (r"`?(?P<name>" + _PKG_NAME + r")`?(?:[ \t]+" + _UPDATE_DEP_WORD + r")?(?:[ \t]+(?:from[ \t]+)?"
           + _TICK_VER + r")?[ \t]+to[ \t]+(?:version[ \t]+)?" + _TICK_VER)
_UPDATE_NAME_RE = re.compile(r"[ \t]+(?:(?:of|the|deps?|dependency|dependencies|" + _UPDATE_DEP_WORD + r")[ \t]+)*"
                             + _UPDATE)
_UPDATE_NEXT_RE = re.compile(r"(?:,[ \t]*(?:and[ \t]+)?|[ \t]+and[ \t]+)" + _UPDATE)
_UPDATE_TO_RE = re.compile(r"[ \t]+(?:back[ \t]+)?to[ \t]+(?:using[ \t]+)?`?(?P<name>(?!v?\d)" + _PKG_NAME +
                           r")`?[ \t]+(?:version[ \t]+)?v?\d+\.\d")
# One name swapped for another: "replaced flake8 with ruff", "Use `erlef/setup-beam` instead of
# `erlef/setup-elixir`", "Remove pipenv in favor of pip-tools", "Moved `chai` to `devDependencies`"
_SWAP_NAME = r"`?(?P<{g}>[a-z@][\w.\-]*(?:/[\w.\-]+)*[a-z0-9])`?"
_SWAP_END = r"(?=[ \t]*(?:[.,;:)]|$|\(|#)|[ \t]+(?:and|in|for|to|as|since|because|from)\b)"
_SWAP_SHAPES: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("replace", re.compile(r"(?i)\b(?:(?:replac|swapp|switch)(?:e|es|ed|ing)?|switch|swap)[ \t]+(?:the[ \t]+)?"
                           r"(?:(?:deprecated|old|legacy)[ \t]+)?(?:(?:dependency|package|library|gem|crate)[ \t]+)?"
                           + _SWAP_NAME.format(g="a") + r"[ \t]+(?:with|by|for)[ \t]+" + _SWAP_NAME.format(g="b")
                           + _SWAP_END), ("replac", "swap", "switch")),
    ("instead", re.compile(r"(?i)\bus(?:e|es|ed|ing)[ \t]+" + _SWAP_NAME.format(g="a") + r"[ \t]+instead[ \t]+of[ \t]+"
                           + _SWAP_NAME.format(g="b") + _SWAP_END), ("instead of",)),
    ("favour", re.compile(r"(?i)" + _SWAP_NAME.format(g="a") + r"[ \t]+in[ \t]+favou?r[ \t]+of[ \t]+"
                          + _SWAP_NAME.format(g="b") + _SWAP_END), (" in favor of ", " in favour of ")),
    ("move", re.compile(r"(?i)\bmov(?:e|es|ed|ing)[ \t]+" + _SWAP_NAME.format(g="a") +
                        r"[ \t]+(?:in)?to[ \t]+`?(?:dev|peer|optional)?[dD]ependencies\b"), ("ependencies",)),
)
# A dependency named as one: "add rubocop-sorbet dependency", "Added the logger dependency", "removed the
# dependency on node-gyp", a conventional commit's deps scope "chore(deps): add conventional-changelog-x"
_DEP_PHRASE_NAME = r"`?(?P<name>(?!(?:peer|dev|optional|runtime|build|test|direct|transitive|circular|missing|unused|" \
                   r"extra|external|new|same|other|native|system|this|that|a|an|the)\b)[a-z@][\w.\-]*(?:/[\w.\-]+)*[a-z0-9])`?"
_DEP_PHRASE_RE = re.compile(
    r"(?i:\b(?:add|remov|drop)(?:s|ed|ing|e|ped|ping)?[ \t]+(?:the[ \t]+|an?[ \t]+)?(?:missing[ \t]+|unused[ \t]+)?)"
    + _DEP_PHRASE_NAME + r"[ \t]+(?:dev-?)?dependency\b|"
    r"\bdependency[ \t]+(?:on|upon)[ \t]+" + _DEP_PHRASE_NAME.replace("name", "name2") + r"(?=[.,;:)]|[ \t]|$)|"
    r"\((?:deps|deps-dev)\):[ \t]+(?i:add|remove|drop)[ \t]+" + _DEP_PHRASE_NAME.replace("name", "name3") +
    r"(?=[.,;:)]|[ \t]|$)"
)
# A name said to be installed: "do you have `jemalloc` installed?", "My mxnet was installed months ago"
_INSTALLED_NAME_RE = re.compile(
    r"\b(?:ha(?:ve|s|d)|got)[ \t]+`(?P<name>[a-z][\w.\-]*[a-z0-9])`[ \t]+installed\b|"
    r"\b(?i:my|the|your|our)[ \t]+`?(?P<name2>[a-z][\w.\-]*[a-z0-9])`?[ \t]+(?:was|is|got|were|are)[ \t]+"
    r"(?:already[ \t]+|not[ \t]+|correctly[ \t]+)?installed\b"
)
# A resolver's second name and Composer's constraints: "Because a (2.6) depends on package-B (>=1.19)",
# "requires symfony/console ^4.0|^5.0", "don't install laravel/framework v4.0.10", "satisfiable by x/y[1.4.0]"
_RESOLVER_SHAPES: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("dep", re.compile(r"\bdepends on (?P<name>[A-Za-z][\w.\-]*[A-Za-z0-9]) \("), ("depends on ",)),
    ("composer", re.compile(r"(?<![\w./\-@])(?P<name>[a-z0-9][\w\-]*/[a-z0-9][\w.\-]*[a-z0-9])"
                            r"(?:(?=[ \t]+(?:v?\d|[\^~*]|dev-|[<>]=?\d))|(?P<ver>\[v?\d+\.\d[\w.\-]*\]))"), ("/",)),
    ("swift", re.compile(r"\bno such module ['\"](?P<name>[A-Za-z_]\w*)(?=['\"])"), ("no such module",)),
)


_DOMAIN_NAME_RE = re.compile(r"[\w\-]+(?:\.[\w\-]+)*\.(?:com|org|net|io|dev|app|co|me|sh|ai)")


_NAME_SHAPES = _MANIFEST_SHAPES + _RESOLVER_SHAPES
# shape names switched off, for bench/extraction_loso.py's leave-one-set-out ablation (empty in use)
_SHAPES_OFF: frozenset[str] = frozenset()

# Round 8 (issue #18): shapes judged leave-one-set-out over dev … dev6 like round 7's (bench/extraction_loso.py
# --rules --round 8), each behind a literal cue.
# "quoted-type": the user type a runtime or compiler message quotes is a symbol, a built-in one is not: Python's
# `'ProjectComplete' object has no attribute`, `type object 'Target'`, TypeScript's `Type 'Timer' is not assignable`
_QUOTED_TYPE_RE = re.compile(
    r"\btype object ['\"](?P<b>[A-Z]\w+)['\"]|(?<![\w.])['\"](?P<a>[A-Z]\w+)['\"] object\b|"
    r"\bType ['\"](?P<t>[A-Z]\w+(?:<[^'\"\n]{0,40}>)?)['\"] is not assignable\b"
)
_BUILTIN_TYPES = _words("NoneType Error Object String Number Boolean Array Function Promise Symbol Date RegExp Map Set "
                        "BigInt")
# "generated-frame": a .NET async/lambda frame or a JVM constructor keeps its compiler-made part, as one symbol:
# `Ns.Cls.<Login>d__16.MoveNext()`, `Activity.<Handler>b__25_1`, `gamestates.Playing.<init>`
_GENERATED_FRAME_RE = re.compile(
    r"(?<![\w.$<])(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.(?:<[A-Za-z_]\w*>[a-z]__[\d_]+(?:\.[A-Za-z_]\w*)*(?:\(\))?|"
    r"<(?:cl)?init>))"
)
# "mix-task": a mix task named beside `mix` is a task, not code: `mix do deps.get, local.rebar --force, deps.compile`
_MIX_TASK_RE = re.compile(r"(?<![\w.\-/])((?:deps|local|ecto|phx|hex|archive|escript|release)\.[a-z][\w.]*[a-z])(?![\w(])")
# "go-mod": `go mod` keeps its subcommand (`go mod tidy`, `go mod download`); the module path `go mod download` and
# `go mod init` take is a package
_GO_MOD_SUBCOMMANDS = _words("download edit graph init tidy vendor verify why")
_GO_MOD_ARGS_RE = re.compile(r"\bgo[ \t]+mod[ \t]+(?:download|init)\b(?![\-.]\w)")
# "go-env": the Go toolchain's documented environment variables are well known as such
_GO_ENV = _words(
    """GO111MODULE GOPRIVATE GONOPROXY GONOSUMDB GONOSUMCHECK GOSUMDB GOINSECURE GOBIN GOCACHE GOMODCACHE
    GOTOOLCHAIN GOWORK GOEXPERIMENT GOTMPDIR GOVCS GOAMD64 GOARM GODEBUG GOGC GOMAXPROCS GOTRACEBACK GOENV
    CGO_ENABLED CGO_CFLAGS CGO_LDFLAGS"""
)
_ENV_KNOWN_8 = ENV_WELL_KNOWN | _GO_ENV
# "module-named": `ImportError: no module named 'x'` in any case, an unquoted dotted module (`No module named
# packaging.version`), and TypeScript's "Could not find a declaration file for module 'x'"
_MODULE_CTX_8_RE = re.compile(
    _MODULE_CTX_RE.pattern.replace(
        r"No module named (?:['\"](?P<a>[\w.]+)['\"]|(?P<n>[A-Za-z_]\w*)\b(?!\.\w))",
        r"[Nn]o module named (?:['\"](?P<a>[\w.]+)['\"]|(?P<n>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\b(?!\.\w))", 1).replace(
        r"Cannot find (?:module|type definition file for)",
        r"(?:Cannot find (?:module|type definition file for)|Could not find a declaration file for module)", 1)
)
# "import-binds": an import statement, quoted in prose too (`"import traceback"`, `` `from x.y import Site` ``), names
# the package; the names it binds are symbols (`from pdlearn.x import daily, weekly`, `import mxnet as mx`,
# `import * as Calendar from "color-calendar"`)
_QUOTED_IMPORT_RE = re.compile(
    r"(?P<q>[\"'`])(?:import[ \t]+(?P<a>[A-Za-z_][\w.]*)|from[ \t]+(?P<b>[A-Za-z_][\w.]*)[ \t]+import[ \t]+"
    r"(?P<names>[A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*))(?P=q)"
)
_IMPORT_BINDS_RE = re.compile(
    r"(?m)(?:^[ \t]*(?:>>>[ \t]*|[>#][ \t]+)?|`)(?:from[ \t]+[\w.]+[ \t]+import[ \t]+"
    r"(?P<names>[A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)|import[ \t]+[\w.]+[ \t]+as[ \t]+(?P<alias>[A-Za-z_]\w*)|"
    r"import[ \t]+\*[ \t]+as[ \t]+(?P<star>[A-Za-z_$][\w$]*)[ \t]+from\b)"
)
# "name-undefined": Python's and pyflakes' undefined name is a symbol: `name 'traceback' is not defined`
_NAME_UNDEFINED_RE = re.compile(r"\b(?:name ['\"](?P<a>[A-Za-z_]\w*)['\"] is not defined|undefined name ['\"](?P<b>[A-Za-z_]\w*)['\"])")
# "manifest-word": the `package` of `package.json` is no word of a dependency sentence
# "gradle-path": the names of a Gradle task or configuration path are no code: `:compileJava FAILED`,
# `configuration ':app:_debugApk'`, "Gradle task assembleDebug failed"
_GRADLE_PATH_RE = re.compile(
    r"(?<![\w:/.\\\-])(?P<path>(?::[A-Za-z_][\w\-]*){2,}|:[A-Za-z_][\w\-]*(?=[ \t]+(?:FAILED|UP-TO-DATE|NO-SOURCE|SKIPPED|"
    r"FROM-CACHE)\b))(?![\w:.])|\b[Gg]radle task[ \t]+(?P<task>[A-Za-z_]\w*)"
)
_GRADLE_SEGMENT_RE = re.compile(r"[A-Za-z_][\w\-]*")
# "ruby-predicate": a Ruby method keeps its `?` / `!`: `` `false?` ``, "the columns_hash? method"
_RUBY_PREDICATE_RE = re.compile(r"`(?P<a>[a-z_]\w*[?!])`|(?<![\w.])(?P<b>[a-z_]\w*[?!])(?= method\b)")
# "action-ref": a GitHub Actions reference is a package (heldout2 decision 5) without its `@v3` too: `actions/checkout`
# anywhere, and a backticked `owner/action` in a sentence about actions or workflows (`lsst-sqre/run-tox`)
_ACTION_REF_RE = re.compile(r"(?<![\w./\-@])(?P<name>actions/[a-z][\w\-]*)(?![\w/@\-]|\.\w)|"
                            r"`(?P<t>[a-z0-9][\w\-]*/[a-z0-9][\w\-]*)`")
# "link-name": a markdown link whose text names the package its registry page or repository is for:
# `[chalk](https://www.npmjs.com/package/chalk/v/4.1.0)`, ``[`esm`](https://github.com/standard-things/esm)``
_LINK_NAME_RE = re.compile(
    r"\[`?(?P<name>@?[\w.\-]+(?:/[\w.\-]+)?)`?\]\(https?://(?:www\.)?(?:github\.com/[\w.\-]+/(?P<repo>[\w.\-]+)|"
    r"npmjs\.com/package/(?P<npm>(?:@[\w.\-]+/)?[\w.\-]+)|pypi\.org/project/(?P<pypi>[\w.\-]+)|"
    r"crates\.io/crates/(?P<crate>[\w.\-]+)|rubygems\.org/gems/(?P<gem>[\w.\-]+)|hex\.pm/packages/(?P<hex>[\w.\-]+))"
    r"(?=[/)#?])"
)
_DEP_SENTENCE_8_RE = re.compile(r"(?i)\b(?:dependenc(?:y|ies)|crates?|packages?(?!\.json)|gems?|librar(?:y|ies)|"
                                r"fail(?:s|ed)? to build)\b")


def _package_shaped(name: str) -> bool:
    """A name that looks like a package by itself: a digit, separator or slash inside, or a known name."""
    low = name.lower()
    return low not in NOT_PACKAGES and low not in _STOP_WORDS and (
        bool(re.search(r"[\d\-_./]", name.strip("@"))) or low in _LEXICON)


def _scan_dependency_grammars(text: str) -> Iterator[_Cand]:
    """Round 7: manifest lines, dependency updates, swaps and resolver names (see the shapes above)."""
    low = text.lower()
    has = low.__contains__
    for shape, rx, cues in _NAME_SHAPES:
        if not any(map(has, cues)):
            continue
        for m in rx.finditer(text) if shape not in _SHAPES_OFF else ():
            if m.group("name").lower() in NOT_PACKAGES:
                continue
            end = m.end("ver") if shape == "composer" and m.group("ver") else m.end("name")
            yield _pkg(m.start("name"), end, m.group("name"), text[m.end("name") : end])
    for m in _DEP_PHRASE_RE.finditer(text) if "dependency" in low or "(deps" in low else ():
        g = m.lastgroup or "name"
        if "dep-phrase" not in _SHAPES_OFF and m.group(g).lower() not in NOT_PACKAGES:
            yield _pkg(m.start(g), m.end(g), m.group(g))
    for m in _INSTALLED_NAME_RE.finditer(text) if " installed" in text and "installed" not in _SHAPES_OFF else ():
        g = m.lastgroup or "name"
        low_name = m.group(g).lower()
        if low_name not in NOT_PACKAGES and low_name not in _GENERIC_WORDS and low_name not in _NOT_MOVED:
            yield _pkg(m.start(g), m.end(g), m.group(g))
    for m in _UPDATE_VERB_RE.finditer(text) if " to " in text and _UPDATE_CUE_RE.search(low) else ():
        t = _UPDATE_NAME_RE.match(text, m.end()) if "update" not in _SHAPES_OFF else None
        while t is not None:
            name = t.group("name")
            if name.lower() in _NOT_MOVED or name.lower() in NOT_PACKAGES or re.fullmatch(r"v\d[\w.]*", name):
                break
            yield _pkg(t.start("name"), t.end("name"), name)
            t = _UPDATE_NEXT_RE.match(text, t.end())
        t = _UPDATE_TO_RE.match(text, m.end()) if "update-to" not in _SHAPES_OFF else None
        if t is not None and t.group("name").lower() not in NOT_PACKAGES | _STOP_WORDS:
            yield _pkg(t.start("name"), t.end("name"), t.group("name"))
    for shape, rx, cues in _SWAP_SHAPES:
        if not any(map(has, cues)):
            continue
        for m in rx.finditer(text) if shape not in _SHAPES_OFF else ():
            pair = [g for g in "ab" if m.groupdict().get(g)]
            # both names package-shaped (`_` names are identifiers, `x.org` a domain), or a move to devDependencies
            if shape == "move" or all(_package_shaped(m.group(g)) and "_" not in m.group(g)
                                      and not _DOMAIN_NAME_RE.fullmatch(m.group(g)) for g in pair):
                for g in pair:
                    if m.group(g).lower() not in NOT_PACKAGES:
                        yield _pkg(m.start(g), m.end(g), m.group(g))


def _pkg(start: int, end: int, name: str, detail: str = "", weak: bool = False) -> _Cand:
    """A package candidate with a normalised name."""
    return _Cand("package", start, end, _pypi_norm(name), detail.strip("\"'"), weak)


def _scan_packages(text: str) -> Iterator[_Cand]:
    """Package pins, installs, imports, tool output lines and well-known names."""
    has_op = "=" in text or "<" in text or ">" in text
    dep_sentence = _DEP_SENTENCE_RE if "manifest-word" in _SHAPES_OFF else _DEP_SENTENCE_8_RE
    for m in _BACKTICK_RE.finditer(text) if "`" in text and dep_sentence.search(text) else ():
        name = m.group(2) or ""
        if _BARE_PKG_RE.fullmatch(name) and name not in _PROGRAM_NAMES:
            yield _pkg(m.start(2), m.end(2), name)  # "the dependencies `packaging` and `argon2`"
    for m in _PIN_RE.finditer(text) if has_op else ():
        name = m.group("name")
        if re.search(r"[a-z]", name) and not name.isupper() and "_" not in name.strip("_")[:1]:
            yield _pkg(m.start(), m.end(), name, m.group("spec"))
    for m in _SPACED_PIN_RE.finditer(text) if has_op else ():
        if m.group("name").lower() in _LEXICON:
            yield _pkg(m.start(), m.end(), m.group("name"), m.group("spec"))
    for m in (_AT_RE if "at-range" in _SHAPES_OFF else _AT_8_RE).finditer(text) if "@" in text else ():
        name = m.group("name")
        if not re.fullmatch(r"[\w.\-]+\.[a-z]{2,}", name) or "/" in name:
            yield _pkg(m.start(), m.end(), name, m.group("ver"))
    for m in _INSTALLED_RE.finditer(text) if "installed" in text else ():
        base = m.start("rest")
        for t in re.finditer(r"\S+", m.group("rest")):
            nv = _NAME_VER_RE.fullmatch(t.group(0))
            if nv:
                yield _pkg(base + t.start(), base + t.end(), nv.group("name"), nv.group("ver"))
    for m in _LISTING_RE.finditer(text) if "." in text else ():
        name = m.group("name")
        if name.lower() not in NOT_PACKAGES and name not in EXECUTABLES:  # `rustc 1.70.0` is the tool
            yield _pkg(m.start("name"), m.end("name"), name)
    for m in _CARGO_ID_RE.finditer(text) if " v" in text and "`" in text else ():
        yield _pkg(m.start("name"), m.end("name"), m.group("name"))
    yield from _scan_package_contexts(text)
    yield from _scan_tool_output(text)
    yield from _scan_package_phrases(text)
    yield from _scan_package_names(text)
    yield from _scan_prose_installs(text)
    yield from _scan_dependency_grammars(text)
    low = text.lower()
    for rx, needles, gate in _PACKAGE_SHAPES:
        for n in needles:
            if n in low:
                break
        else:
            continue
        for m in rx.finditer(text) if gate is None or gate.search(low) else ():
            g = next(k for k, v in m.groupdict().items() if v is not None)  # name, or name2...
            name = m.group(g)
            if name.lower() not in NOT_PACKAGES and name.rsplit(".", 1)[-1] not in FILE_EXTS | {"version"}:
                yield _pkg(m.start(g), m.end(), name, text[m.end(g) : m.end()].lstrip(":@ "))


def _scan_package_contexts(text: str) -> Iterator[_Cand]:
    """Packages named by import errors, import lines and library/module wording."""
    has = _Has(text)
    module_ctx = has(
        "module", "import", "require(", "crate", "compile", "from '", 'from "', "(lib", "(bin", "type definition"
    )
    for m in _QUOTED_IMPORT_RE.finditer(text) if "import" in text and "import-binds" not in _SHAPES_OFF else ():
        g = "a" if m.group("a") else "b"
        yield _pkg(m.start(g), m.end(g), m.group(g).split(".")[0])
    for m in _LINK_NAME_RE.finditer(text) if "](http" in text and "link-name" not in _SHAPES_OFF else ():
        target = m.group("repo") or m.group("npm") or m.group("pypi") or m.group("crate") or m.group("gem") or m.group("hex")
        if m.group("name").lower() == target.removesuffix(".git").lower():
            yield _pkg(m.start("name"), m.end("name"), m.group("name"))
    for m in _ACTION_REF_RE.finditer(text) if "/" in text and "action-ref" not in _SHAPES_OFF and "action" in (
            low := text.lower()) else ():
        g = m.lastgroup or "name"
        if g == "name" or "workflow" in low or "action" in low:
            yield _pkg(m.start(g), m.end(g), m.group(g))
    for m in (_MODULE_CTX_RE if "module-named" in _SHAPES_OFF else _MODULE_CTX_8_RE).finditer(text) if module_ctx else ():
        g = next(k for k in "abcdefghijklmn" if m.group(k))
        name = m.group(g)
        if name.startswith((".", "/", "@/", "~")):
            continue
        top = name if name.startswith("@") or "/" in name else name.split(".")[0]
        yield _pkg(m.start(g), m.end(g), top)
    for m in _IMPORT_LINE_RE.finditer(text) if "import" in text else ():
        g = "a" if m.group("a") else "b"
        for part in re.finditer(r"[\w.]+", m.group(g)):
            if part.group(0) != "as":
                s = m.start(g) + part.start()
                yield _pkg(s, s + len(part.group(0)), part.group(0).split(".")[0])
    lib_ctx = has("librar", "package", "crate", "gem", "module", "dependenc", "lib")
    for m in _LIB_WORD_RE.finditer(text) if lib_ctx else ():
        name = m.group("name")
        low = name.lower()
        ticked = text[m.start("name") - 1 : m.start("name")] == "`" and m.group("word") != "module"
        dotted = "." in name and m.group("word") == "package" and name.rsplit(".", 1)[-1] not in FILE_EXTS
        if ticked or dotted:  # `atty` dependency, the Cabinet.Presentation package
            yield _pkg(m.start("name"), m.end("name"), name)
            continue
        if name != low and not (name[0].isupper() and name[1:] == name[1:].lower()):
            continue
        if low in KNOWN_PACKAGES or low in AMBIGUOUS_PACKAGES or low in _STDLIB:
            yield _pkg(m.start("name"), m.end("name"), name)


def _scan_tool_output(text: str) -> Iterator[_Cand]:
    """Packages named in pip/cargo/go/dependabot output lines."""
    has = _Has(text)
    for m in _COLLECTED_RE.finditer(text) if "collected" in text else ():
        base = m.start("rest")
        for t in re.finditer(r"[A-Za-z][\w.\-]*", m.group("rest")):
            yield _pkg(base + t.start(), base + t.end(), t.group(0))
    gated = (
        (
            _TOOL_LINE_RE,
            has(
                "Compiling",
                "Checking",
                "Download",
                "Installing",
                "Collecting",
                "Requirement",
                "go: ",
            ),
        ),
        (_GO_OK_RE, "\t" in text),
        (_FROM_PKG_RE, "(from " in text),
        (_BUMP_RE, has("Bump", "Update", "Upgrade")),
        (_DEP_RE, "dependency" in text),
        (_BUMPS_LINK_RE, "Bumps [" in text),
        (_NOT_COMPILED_RE, "compile `" in text),
        (_BECAUSE_RE, " depends on" in text),
        (_COMPOSER_REQ_RE, " requires " in text),
    )
    for m in _COMPOSER_REQ_RE.finditer(text) if " requires " in text else ():
        yield _pkg(m.start("dep"), m.end("dep"), m.group("dep"))
    for m in _PYTEST_HEADER_RE.finditer(text) if has("plugins: ", "pytest-") else ():
        for t in _NAME_VER_RE.finditer(m.group("rest")):
            start = m.start("rest") + t.start()
            yield _Cand("package", start, start + len(t.group(0)), _pypi_norm(t.group("name")), t.group("ver"))
    for rx, ok in gated:
        for m in rx.finditer(text) if ok else ():
            name = m.group("name")
            if name.lower() not in NOT_PACKAGES and not name.endswith((".whl", ".tar.gz", ".zip")):
                yield _pkg(m.start("name"), m.end("name"), name)


def _scan_package_phrases(text: str) -> Iterator[_Cand]:
    """Packages named by phrasing: ``X pin``, ``name v1.2.3``, ``requests ProxyError``, ``from A to B``,
    ``Updated `a` to v4 and `b` to v7``."""
    low = text.lower()
    moves = _Has(text)("pdat", "pgrad", "owngrad", "igrat", "ump", "in") and _Has(low)(
        "updat", "upgrad", "downgrad", "migrat", "bump", "pin")  # the second: what the verbs need, in any case
    for m in _MOVE_VERB_RE.finditer(text) if moves else ():
        t = _MOVED_NAME_RE.match(text, m.end())
        while t is not None:
            name = t.group("name")
            if name.lower() in _NOT_MOVED or name.lower() in NOT_PACKAGES:
                break
            yield _pkg(t.start("name"), t.end("name"), name)
            t = _MOVED_NEXT_RE.match(text, t.end())
    for m in (
        _DEP_WORD_RE.finditer(text) if _Has(text)(" pin", " version", " upgrade", " bump") else ()
    ):
        if m.group("name") in _LEXICON and m.group("name") not in NOT_PACKAGES:
            yield _pkg(m.start("name"), m.end("name"), m.group("name"))
    for m in _SEMVER_NAME_RE.finditer(text) if "v" in text and _V_DIGIT_RE.search(text) else ():
        name = m.group("name")
        if ("-" in name or "_" in name or name in _LEXICON) and name.lower() not in NOT_PACKAGES:
            yield _pkg(m.start("name"), m.end("name"), name)
    for m in _QUALIFIER_RE.finditer(text) if _Has(text)("Error", "Exception") or _HUMPS_RE.search(text) else ():
        if m.group("name") in KNOWN_PACKAGES or m.group("name") in _QUALIFIER_AMBIGUOUS:
            yield _pkg(m.start("name"), m.end("name"), m.group("name"))
    for m in _SWITCH_RE.finditer(text) if "from" in text and "to" in text else ():
        a, b = m.group("a"), m.group("b")
        if _is_known_package(a) or _is_known_package(b):
            for g in ("a", "b"):
                if m.group(g) in _LEXICON and m.group(g) not in NOT_PACKAGES:
                    yield _pkg(m.start(g), m.end(g), m.group(g))


def _scan_prose_installs(text: str) -> Iterator[_Cand]:
    """The names prose installs, one or a list: only names shaped like packages (a digit, ``-``,
    ``_`` or ``.`` inside, or a known package name), so "install it" or "install the" give nothing."""
    for m in _PROSE_INSTALL_RE.finditer(text) if "install" in text else ():
        t = _PROSE_PKG_RE.match(text, m.end())
        while t is not None:
            name = t.group("name")
            low = name.lower()
            if low in NOT_PACKAGES or low in _STOP_WORDS or low in EXECUTABLES - _LEXICON or not (
                    re.search(r"[\d\-_.]", name) or low in _LEXICON):
                break
            yield _pkg(t.start("name"), t.end("name"), name)
            t = _PROSE_NEXT_RE.match(text, t.end())


def _scan_package_names(text: str) -> Iterator[_Cand]:
    """Well-known package names in prose (weak), and ambiguous names followed by a version."""
    words = set(_LEX_WORD_RE.findall(text.lower()))
    if _LEXICON.isdisjoint(words) and not any(_maybe_package(w) for w in words):
        return
    for m in _WORD_RE.finditer(text):
        word = m.group(1)
        low = word.lower()
        if not _maybe_package(low):
            continue
        versioned = _VERSION_AFTER_RE.match(text, m.end()) is not None
        titlecase = word[:1].isupper() and word[1:] == word[1:].lower()
        if versioned and titlecase and not _DEP_VERB_BEFORE_RE.search(text, max(0, m.start() - 40), m.start()):
            continue  # a product's release in prose (Vite 6.0 provides, Celery 5.0.0 ...), not a pin
        if _is_known_package(word) and (versioned or not titlecase):
            yield _pkg(m.start(), m.end(), word, weak=not versioned)
        elif versioned and word == low and low in AMBIGUOUS_PACKAGES:
            yield _pkg(m.start(), m.end(), word)
    for m in _PAIR_RE.finditer(text) if "/" in text else ():
        if _is_known_package(m.group(1)) and _is_known_package(m.group(2)):
            yield _pkg(m.start(1), m.end(1), m.group(1), weak=True)
            yield _pkg(m.start(2), m.end(2), m.group(2), weak=True)


# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------


def _command_norm(cmd: str) -> str:
    """Executable plus subcommand for tools with subcommands, else the executable."""
    words = [w.strip("\"'") for w in cmd.split()]
    while words and (words[0] == "sudo" or re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0])):
        words = words[1:]
    if not words:
        return cmd.strip()
    exe = re.split(r"[/\\]", words[0])[-1]
    exe = {"python3": "python", "pip3": "pip", "docker-compose": "docker compose"}.get(exe, exe)
    rest = words[1:]
    if exe == "python" and len(rest) >= 2 and rest[0] == "-m":
        return f"python -m {rest[1]}"
    if exe == "docker compose" and rest and not rest[0].startswith("-"):
        return "docker compose"
    if _is_task_runner(exe):
        # `mix test` and `mix format` are two commands, not one `mix`; `mvn clean install` is an install
        # (not past an option: `mvn -pl core -am test` says nothing of which words are values)
        goals = [w for w in rest if not w.startswith("-") and "=" not in w] if rest and not rest[0].startswith("-") else []
        goals = [w for w in goals if w != "clean"] or goals
        return f"{exe} {goals[0]}" if goals else exe
    if exe in SUBCOMMANDS and rest and not rest[0].startswith("-"):
        if exe in _RUNNERS and rest[0] == "run" and len(rest) >= 2 and not rest[1].startswith("-"):
            # the task or program run names the command: `mise run lint` is not `mise run test:integration`,
            # and `uv run python -m pytest` runs what `python -m pytest` does
            inner = rest[1:]
            while inner[:2] == [exe, "run"] and len(inner) > 2:  # `uv run uv run …`
                inner = inner[2:]
            return f"{exe} run {_command_norm(' '.join(inner[:12]))}"
        if exe == "docker" and rest[0] == "compose":
            return "docker compose"
        return f"{exe} {rest[0]}"
    return exe


def legacy_command_norm(norm: str) -> str:
    """The name an older release gave a task runner's command (`mise run lint` was `mise run`,
    `mix test` was `mix`): items stored then are linked to it; "" when it had the same name."""
    words = norm.split()
    if len(words) >= 3 and words[0] in _RUNNERS - _NODE_RUNNERS and words[1] == "run":
        return f"{words[0]} run"
    return words[0] if len(words) == 2 and _is_task_runner(words[0]) else ""


def _is_task_runner(exe: str) -> bool:
    """`mix`, `rake`, `./gradlew`…: the word after it is the task (it has no subcommand table)."""
    return (exe in _TASK_RUNNERS or f"./{exe}" in _TASK_RUNNERS) and exe not in SUBCOMMANDS


def _starts_with_executable(cmd: str, *, single_ok: bool) -> bool:
    """True when a command-like string starts with a known executable (and subcommand)."""
    words = cmd.split()
    while words and (words[0] == "sudo" or re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0])):
        words = words[1:]
    if not words:
        return False
    exe = words[0].rsplit("/", 1)[-1] if words[0].startswith("/") else words[0]
    if exe not in EXECUTABLES:
        return False
    if len(words) == 1:
        return single_ok and exe not in _ENGLISH_EXECUTABLES and exe != "graphmem"
    if exe in SUBCOMMANDS and exe in _ENGLISH_EXECUTABLES:
        return words[1] in SUBCOMMANDS[exe]
    return True


def _strip_env_prefix(cmd: str, start: int) -> tuple[str, int]:
    """Drop leading ``NAME=value`` assignments from a command, returning the new start."""
    m = _ENV_ASSIGN_PREFIX_RE.match(cmd)
    if m and m.end() < len(cmd):
        return cmd[m.end() :], start + m.end()
    return cmd, start


_CHAIN_CHARS = frozenset("&|;")
_CHAIN_TOKEN_RE = re.compile(
    r"\"[^\"]*\"|'[^']*'|\$\((?:[^()]|\([^()]*\))*\)|>\||(?P<sep>&&|\|\||;|\|(?!&))")


def _split_chain(cmd: str, start: int) -> Iterator[tuple[str, int]]:
    """The commands of a shell line: split at ``&&``, ``||``, ``;`` and ``|`` outside quotes and
    ``$(...)``, without wrapping parentheses, ``sudo`` or leading ``NAME=value`` assignments."""
    parts: list[tuple[int, int]] = []
    begin = 0
    for m in _CHAIN_TOKEN_RE.finditer(cmd) if not _CHAIN_CHARS.isdisjoint(cmd) else ():
        if m.lastgroup == "sep":
            parts.append((begin, m.start()))
            begin = m.end()
    parts.append((begin, len(cmd)))
    for a, b in parts:
        piece = cmd[a:b]
        lead = len(piece) - len(piece.lstrip(" \t("))
        piece = piece.strip(" \t(")
        if piece.endswith(")") and piece.count(")") > piece.count("("):
            piece = piece[:-1].rstrip()
        if piece.startswith("sudo "):
            piece, lead = piece[5:].lstrip(), lead + len(piece) - len(piece[5:].lstrip())
        piece, at = _strip_env_prefix(piece, start + a + lead)
        if piece:
            yield piece, at


def _chain_commands(cmd: str, start: int, *, single_ok: bool, trusted: bool = False) -> Iterator[_Cand]:
    """Command candidates for each link of a chain; ``trusted``: the first link is one already."""
    for i, (piece, at) in enumerate(_split_chain(cmd, start)):
        if (trusted and i == 0) or _starts_with_executable(piece, single_ok=single_ok) or _unknown_tool(piece):
            yield _Cand("command", at, at + len(piece), _command_norm(piece))


def _unknown_tool(cmd: str) -> bool:
    """A tool we do not know, run with a flag or a redirection: ``coderabbit-extract --help``."""
    return _UNKNOWN_TOOL_RE.match(cmd) is not None


_UNKNOWN_TOOL_RE = re.compile(r"(?:\./|/)?[a-z][\w.\-/]*[ \t]+(?:-{1,2}[a-z]|-[A-Z]\b|\d?>)")


_SHELL_PREFIX_RE = re.compile(
    r"""(?x)[ \t]*(?:
        \d{1,2}\.[ \t]+                                  # a numbered step: "2. cd laravel"
      | (?:\#\d+[ \t]+\d+\.\d+[ \t]+)?>[ \t]+             # npm's echo of a script: "> webpack -p",
                                                         # behind BuildKit's step and time "#0 0.4 "
      | [\w.\-]+@[\w.\-]+:[^\s$#]*[$\#][ \t]+             # user@host:~/dir$
      | \[[\w.\-]+@[\w.\-]+[ \t][^\]\n]*\][$\#][ \t]+        # [user@host dir]$
      | [\w.\-]+@[\w.\-]+[ \t]+\S+[ \t]+%[ \t]+            # zsh: user@host dir %
      | (?:\d\d:\d\d[ \t]+)?~?[\w./\-]*[ \t]+\([\w./\-]+\)\$[ \t]+  # 22:45 ~/dir (master)$
      | \#[ \t]+                                         # a root shell's prompt: "# kubectl ..."
      | Run[ \t]+                                        # a CI step's echo (GitHub Actions)
      | [A-Za-z]:\\[^>\n]*>                               # C:\dir>
      | ➜[ \t]+\S+(?:[ \t]+git:\([^)\n]*\))?(?:[ \t]+✗)?[ \t]+  # zsh's arrow prompt
    )?"""
)
_SHELL_START = frozenset("./(")
# round 8 "prompt": prompts with a virtualenv, a bracketed tag or a macOS `host:dir user` before their `$`/`#`/`%`:
# `(venv) IGOR-3:demo igor$ python manage.py runserver`, `[staging]root@i-86402c2e:~# kvexpress`, `root@core:~# X=1 diss -e g`,
# `(pseudofinder) [xxx]$ pseudofinder.py -h`, `> % gdb ./build/bin/rollball`: what follows is the command, whatever it runs
_PROMPT_8_RE = re.compile(
    r"""(?x)[ \t]*(?:
        (?:\([\w.\-]+\)[ \t]*)+(?:\[[\w.\-]+\])?(?:[\w.\-]+@[\w.\-]+:[^\s$\#%]*|[\w.\-]+:\S+[ \t]+[\w.\-]+)?
      | \[(?:[\w.\-]*[a-z][\w.\-]*|[\w.\-]+@[\w.\-]+[ \t][^\]\n]{1,40})\](?:[\w.\-]+@[\w.\-]+:[^\s$\#%]*)?
      | [\w.\-]+@[\w.\-]+:[^\s$\#%]*
      | >[ \t]+(?=%)
    )[$\#%][ \t]+(?P<cmd>(?:[A-Z_][A-Z0-9_]*=\S*[ \t]+)*[a-z./~][^\n]*?)[ \t]*$"""
)
# round 8 "shell-comment": a shell comment ends the command before it: `$ export GO111MODULE=on # manually active …`
_SHELL_COMMENT_RE = re.compile(r"[ \t]+#(?:[ \t]|$)")


def _uncomment(cmd: str) -> str:
    """``cmd`` without a trailing shell comment (none inside quotes: a quote before the ``#`` keeps it)."""
    m = _SHELL_COMMENT_RE.search(cmd) if "#" in cmd and "shell-comment" not in _SHAPES_OFF else None
    return cmd[: m.start()] if m and not _QUOTE_CHAR_RE.search(cmd, 0, m.start()) else cmd
_PROSE_WORDS = _words(
    """the a an is are was were to of for with this that it you we i be have has should will can
    not if when but so then please also"""
)


def _scan_shell_lines(text: str) -> Iterator[_Cand]:
    """A line that is nothing but a command (chain): what a terminal or a Bash tool call shows."""
    pos = 0
    prompts = "prompt" not in _SHAPES_OFF and _Has(text)("$ ", "# ", "% ")
    for line in text.split("\n"):
        line_start, pos = pos, pos + len(line) + 1
        p = _PROMPT_8_RE.match(line) if prompts else None
        if p is None and "~" in line and "spaced-prompt" not in _SHAPES_OFF:
            p = _SPACED_PROMPT_RE.match(line)
        if p is not None:
            cmd, at = _strip_env_prefix(_uncomment(p.group("cmd")).removeprefix("sudo "), line_start + p.start("cmd"))
            if len(cmd) <= 400 and cmd.strip():
                yield from _chain_commands(cmd.rstrip(), at, single_ok=True, trusted=True)
            continue
        head_char = line.lstrip()[:1]
        if (not head_char or head_char.isupper() and line.lstrip()[1:2] != ":"
                and not line.lstrip().startswith("Run ") or len(line) > 400):
            continue  # prose starts with a capital; a drive prompt (C:\\) does too
        prefix = _SHELL_PREFIX_RE.match(line)
        at = line_start + (prefix.end() if prefix else 0)
        cmd = line[at - line_start :].rstrip()
        if cmd.endswith(" \\"):
            cmd = cmd[:-1].rstrip()  # the line continues the command; the backslash is no argument
        first = cmd.split(None, 1)[0] if cmd else ""
        by_path = _executable_path(first)
        if (first not in EXECUTABLES and first[:1] not in _SHELL_START and not by_path
                and not _unknown_tool(cmd)):
            continue
        if cmd.startswith("(") and cmd.endswith(")"):
            cmd, at = cmd[1:-1], at + 1
        words = re.sub(r"\"[^\"]*\"|'[^']*'", " ", cmd).split()
        if not words or len(cmd) > 400 or cmd.endswith((":", ",")):
            continue
        if not (_PROSE_WORDS | _STOP_WORDS).isdisjoint(w.lower() for w in words):
            continue
        first = words[0]
        head = next(_split_chain(cmd, 0), ("", 0))[0].split()
        if len(words) > 1 and (words[1].rstrip("!:").lower() in _LOG_LEVELS or words[-1].endswith("!")
                               or re.fullmatch(r"v?\d+(?:\.\d+)+", words[1])
                               or "programs" not in _SHAPES_OFF and (cmd.endswith("$") or words[1] == "version"
                                                                     and re.match(r"v?\d+\.\d", words[2:3][0] if
                                                                                  words[2:] else ""))):
            continue  # `npm ERR! code E404` is the tool's log, `cargo 1.32.0 (...)` its version
        if len(words) > 2 and words[-2].startswith("--") and re.fullmatch(r"[a-z]+(?:s|ed|ing)", words[-1]):
            continue  # a verb after the flags: `cargo build --release fails` is a sentence; a short
            # flag takes a value (`psql -d postgres`, `cargo clippy -- -D warnings`)
        if first in _ENGLISH_EXECUTABLES and not _english_command(head):
            continue
        if len(words) == 1 and first[:1] in "/~" and re.search(r"\.[A-Za-z]\w*$", first):
            continue  # a lone absolute path to a file (`/root/.nuget/NuGet/NuGet.Config`) is a file
        known = first in EXECUTABLES or re.fullmatch(r"\.{0,2}/[\w.\-/]+", first) is not None
        if known or by_path or _unknown_tool(cmd):
            yield from _chain_commands(cmd, at, single_ok=True, trusted=True)


def _executable_path(word: str) -> bool:
    """A path to a program: ``C:\\flutter\\bin\\flutter.bat``, ``D:\\jdk\\bin\\java.exe``, or a path
    whose last part is a known executable (``/home/runner/.cargo/bin/cargo``)."""
    if "/" not in word and "\\" not in word:
        return False
    name = re.split(r"[/\\]", word)[-1]
    return name.lower().endswith((".exe", ".bat", ".cmd")) or name in EXECUTABLES


def _english_command(words: list[str]) -> bool:
    """An executable that is also an English word starts a command only with command-like args."""
    if len(words) < 2:
        return False
    if words[0] == "cd":
        return len(words) == 2
    if words[0] == "which":
        return words[1] in EXECUTABLES
    return (words[1] in SUBCOMMANDS.get(words[0], ()) or _arg_like(words[1]) or "-" in words[1]
            or words[1] == ".")


_TOOL_VERB_RE = re.compile(r"[a-z][\w\-]*[ \t]+(?:" + "|".join(sorted(_COMMON_VERBS)) + r")\b[^`]*")


def _scan_marked_commands(text: str) -> Iterator[_Cand]:
    """Commands on prompt lines, Docker RUN lines, in backticks and in quoted ``sh -c`` strings."""
    for rx, ok in ((_PROMPT_RE, "$" in text), (_RUN_RE, "RUN" in text)):
        for m in rx.finditer(text) if ok else ():
            for piece, at in _split_chain(_uncomment(m.group(1)).rstrip(), m.start(1)):
                yield _Cand("command", at, at + len(piece), _command_norm(piece))
    for m in _BACKTICK_RE.finditer(text):
        g = 1 if m.group(1) is not None else 2
        raw = m.group(g)
        cmd, start = raw.strip(), m.start(g) + len(raw) - len(raw.lstrip())
        head, _ = _strip_env_prefix(cmd.removeprefix("sudo "), start)
        if " " not in head and "lone-program" not in _SHAPES_OFF and not (
                _CUE_BEFORE_RE.search(text, max(0, m.start() - 40), m.start()) or _FAILED_AFTER_RE.match(text, m.end())):
            continue  # a program named, not run: "the version of your `psql` client"
        if _starts_with_executable(head, single_ok=True):
            yield from _chain_commands(cmd, start, single_ok=True)
        elif _TOOL_VERB_RE.fullmatch(head):
            yield from _chain_commands(cmd, start, single_ok=True, trusted=True)  # `pipenv install`
    last = 0  # each quote char may open a quoted command right after a cue word or before "command"
    for q in _QUOTE_CHAR_RE.finditer(text) if "cued-quote" not in _SHAPES_OFF else ():
        at = q.start()
        if at < last or text[at - 1 : at].isalnum() and text[at + 1 : at + 2].isalnum():
            continue  # inside an earlier one, or an apostrophe
        quoted = _QUOTED_AT_RE.match(text, at)
        if quoted is None:
            continue
        cmd = quoted.group("cmd")
        words = cmd.split()
        single = words[0].startswith("./") or (  # round 8 "cued-program": a lone known program run (`run "make"`)
            words[0] in EXECUTABLES and words[0] not in ("sudo", "env") and "cued-program" not in _SHAPES_OFF)
        if (cmd == cmd.strip() and _CUED_HEAD_RE.fullmatch(words[0]) and (len(words) >= 2 or single)
                and len(words) <= 10 and not any(w.lower() in _PROSE_WORDS for w in words)
                and words[0].lower() not in _STOP_WORDS
                and not (len(words) > 1 and re.fullmatch(r"v?\d+(?:\.\d+)+", words[1]))  # `phoenix 1.4.15`
                and (_CUE_AFTER_RE.match(text, quoted.end()) or _CUE_BEFORE_RE.search(text, max(0, at - 40), at))):
            last = quoted.end()
            yield from _chain_commands(cmd, quoted.start("cmd"), single_ok=True, trusted=True)
    for m in _QUOTED_RE.finditer(text) if '"' in text or "'" in text else ():
        cmd = m.group(2)
        first = cmd.split()[0].rsplit("/", 1)[-1]
        runnable = first in ("sh", "bash", "zsh") or _starts_with_executable(cmd, single_ok=False)
        if runnable and len(cmd.split()) >= 2 and first not in _ENGLISH_EXECUTABLES:
            yield _Cand("command", m.start(2), m.end(2), _command_norm(cmd))


def _arg_like(word: str) -> bool:
    """True for a word that reads as a command-line argument rather than prose."""
    if word.startswith(("-", "'", '"')):
        return True
    if re.search(r"[/=~@:_.]", word) and word not in (".", ",", ":"):
        return True
    return bool(re.fullmatch(r"\d+|[A-Z][A-Z0-9_]+", word))


_PROSE_EXE_RE = re.compile(
    r"(?<![\w`$/.\-])("
    + "|".join(
        sorted((re.escape(e) for e in _PROSE_EXECUTABLES | {"make", "go"}), key=len, reverse=True)
    )
    + r")(?=[ \t])"
)
_ARG_RE = re.compile(r"[ \t]+(\"[^\"\n]*\"|'[^'\n]*'|[^\s]+)")


# round 8 "source-script": `source` (or `.`) of a shell script or a venv's activate is a command wherever it is written:
# "First: source /opt/ros/humble/setup.sh", "python -m venv .venv && source .venv/bin/activate (98% success)"
_SOURCE_SCRIPT_RE = re.compile(r"(?<![\w./\-])source[ \t]+(?:(?:~|\.{1,2})?/|\.)[\w.\-]*(?:/[\w.\-]+)*"
                               r"(?:/activate|\.(?:sh|bash|zsh|env)|(?<=/)\.\w*rc)(?![\w/\-])")


def _scan_prose_commands(text: str) -> Iterator[_Cand]:
    """Commands written in running prose: executable, known subcommand, then argument words."""
    for m in _SOURCE_SCRIPT_RE.finditer(text) if "source " in text and "source-script" not in _SHAPES_OFF else ():
        yield _Cand("command", m.start(), m.end(), "source")
    for m in _PROSE_EXE_RE.finditer(text):
        exe = m.group(1)
        before = text[max(0, m.start() - 6) : m.start()].split()
        if before and before[-1].lower() in _DETERMINERS and text[m.end() : m.end() + 2] != " -":
            continue  # `the git status` is prose, `your rustc --version` a command
        args = [
            (a.group(1), a.end(1))
            for a in _ARG_RE.finditer(text, m.end(), _line_end(text, m.end()))
        ]
        args = _contiguous(args)
        j = 0
        if exe in SUBCOMMANDS:
            if not args or args[0][0] not in SUBCOMMANDS[exe]:
                continue
            j = 1
            group = SUBCOMMANDS.get(f"{exe}-{args[0][0]}", ()) or _SUBGROUPS.get(f"{exe}-{args[0][0]}", ())
            if exe == "go" and args[0][0] == "mod" and "go-mod" not in _SHAPES_OFF:
                group = _GO_MOD_SUBCOMMANDS  # `go mod tidy`
            if len(args) > 1 and args[1][0] in group:
                j = 2
            while (j + 1 < len(args) and re.fullmatch(r"[a-z][a-z\-]*", args[j][0])
                   and args[j][0] not in _STOP_WORDS and args[j + 1][0].startswith("-")):
                j += 1  # a sub-subcommand before its flags: `npm audit fix --force`
            takes_names = args[j - 1][0] in (
                "install",
                "add",
                "i",
                "run",
                "get",
                "remove",
                "uninstall",
                "exec",
            )
        else:
            takes_names = False
        end_i = _consume_args(args, j, takes_names)
        if exe not in SUBCOMMANDS and (end_i == j or not _first_arg_ok(args[j][0])):
            continue
        end_c = args[end_i - 1][1] if end_i else m.end()
        yield _Cand("command", m.start(), end_c, _command_norm(text[m.start() : end_c]))


def _line_end(text: str, pos: int) -> int:
    """Index of the end of the line containing ``pos``."""
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl


def _contiguous(args: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Cut an argument list at the first word glued to sentence punctuation."""
    out = []
    for word, end in args:
        if (word[-1] in ",;:)!?" or (word.endswith(".") and word not in (".", "./..."))
                or word[-1] in _CLOSING and word[0] != word[-1]):  # a quoted command's closing quote
            stripped = word.rstrip(",;:)!?." + _CLOSING)
            if stripped:
                out.append((stripped, end - (len(word) - len(stripped))))
            break
        out.append((word, end))
    return out


def _first_arg_ok(arg: str) -> bool:
    """The first argument of a plain executable in prose must be a flag or a path-like word."""
    if re.fullmatch(r"v?\d+(?:\.[\dx]+)*", arg) or arg.startswith("(") or (
            "programs" not in _SHAPES_OFF and arg in ("<", ">", "<=", ">=", "==", "~>", "^")):  # `gcc >= 7`
        return False  # a version, or Bundler's `rails (= 4.0.0)` requirement
    return arg.startswith("-") or arg in _COMMON_VERBS or bool(re.search(r"[/=]|\.[a-z]{1,5}$|_", arg))


def _consume_args(args: list[tuple[str, int]], j: int, takes_names: bool) -> int:
    """Index just past the argument words that follow a command head."""
    prev_flag = ""
    while j < len(args):
        word = args[j][0]
        if word == "." and prev_flag:
            return j + 1
        if _arg_like(word) or (prev_flag in _VALUE_FLAGS and word.lower() not in _STOP_WORDS):
            prev_flag = word if word.startswith("-") else ""
            j += 1
            continue
        if (takes_names and re.fullmatch(r"[a-z][\w.\-]*", word) and word not in _STOP_WORDS
                and not ("programs" not in _SHAPES_OFF and word in _vocab.NOT_ARGUMENTS)
                or word in _COMMON_VERBS and (j == 0 or _arg_like(args[j - 1][0]))):  # php x.phar install
            prev_flag = ""
            j += 1
            continue
        break
    return j


# One installer grammar: a package manager, flags, its install verb, then flags and package arguments
# (`go get github.com/x/y`, `composer require a/b`, `pip install -U --no-cache just`, `mim install x`)
_INSTALL_RE = re.compile(
    r"\b(?:(?:pip3?|pipx|pip-save|uv pip|uv tool|uv|poetry|pdm|conda|mamba|mim|npm|pnpm|yarn(?:[ \t]+global)?|bun|"
    r"cargo|gem|bundle|brew|apt-get|apt|dnf|yum|apk|choco|scoop|winget|go|nuget)"
    r"(?:[ \t]+--?[a-z][\w\-]*)*[ \t]+"
    r"(?:install|add|i|get|uninstall|upgrade|remove)(?:[ \t]+--reinstall)?|dotnet[ \t]+add(?:[ \t]+\S+)?[ \t]+package|"
    r"composer(?:[ \t]+global)?[ \t]+require|mix[ \t]+deps\.(?:get|compile|update|clean|unlock))\b(?![\-.]\w)"
)
_VERSION_ARG_RE = re.compile(r"[\"']?(?:dev-\w|v?\d|[\^~*<>=])")
_INSTALL_ARG_RE = re.compile(r"[ \t]+(\S+)")


def _scan_install_args(text: str) -> Iterator[_Cand]:
    """Package names given as arguments to install/add commands."""
    for m in _INSTALL_RE.finditer(text) if _Has(text)("install", "add", "require", "deps.", "upgrade", "remove",
                                                      " i ", " get ") else ():
        names = list(_install_names(text, m.end()))
        yield from names
        if names and "installer-command" not in _SHAPES_OFF and _installer_head_ok(text, m):
            yield _installer_command(text, m, names[-1].end)
    for m in _GO_MOD_ARGS_RE.finditer(text) if "go mod " in text and "go-mod" not in _SHAPES_OFF else ():
        yield from _install_names(text, m.end())


def _installer_head_ok(text: str, m: re.Match[str]) -> bool:
    """A manager no other scanner knows, heading its line (after a bullet, a `>` or a `:` at most)."""
    if m.group(0).split(None, 1)[0] in EXECUTABLES:
        return False
    before = text[text.rfind("\n", 0, m.start()) + 1 : m.start()].rstrip()
    return before in ("", "-", "*") or before.endswith((":", ">"))


def _installer_command(text: str, m: re.Match[str], last_name: int) -> _Cand:
    """Round 8 "installer-command": an install the grammar reads, with a package argument, is a command from its
    package manager to the end of its arguments, a manager the other scanners do not know too (`mim install mmengine`,
    `pip-save install discord.py[voice]`, `- apk add --no-cache aws-cli`, "steps i took choco install yarn")."""
    args = _contiguous([(a.group(1), a.end(1)) for a in _ARG_RE.finditer(text, m.end(), _line_end(text, m.end()))])
    j = _consume_args(args, 0, True)
    end = max(args[j - 1][1] if j else m.end(), last_name)
    return _Cand("command", m.start(), end, _command_norm(text[m.start() : end]))


def _install_names(text: str, pos: int) -> Iterator[_Cand]:
    """Package-name arguments after an install verb, up to the end of the command."""
    if text[pos : pos + 1] in ("`", "'", '"'):  # the quoted command ends at the verb
        return
    skip_next = flagged = named = False
    for t in _INSTALL_ARG_RE.finditer(text[pos : _line_end(text, pos)]):
        word = t.group(1)
        start = pos + t.start(1)
        if word in ("&&", "||", ";", "|") or word.startswith("#"):
            break
        closing = word.rstrip(",;.)?!")[-1:] in ("\"", "'", "`") and word[0] not in "\"'`"
        if skip_next or word.startswith("-"):
            flagged = True
            skip_next = not skip_next and word in _VALUE_FLAGS and "=" not in word
            if closing or word[-1] in ",;":
                break
            continue
        if word.lower() in _STOP_WORDS and (named or not flagged or t.end() < len(t.string)):
            break
        if named and word[:1] in "\"'" and _VERSION_ARG_RE.match(word):
            continue  # Composer's version argument: `composer require a/b "dev-master"`
        bare = word.removesuffix("**").strip("\"'`,;.)?!")
        if ("://" in bare or bare in _vocab.NOT_ARGUMENTS) and "installers" not in _SHAPES_OFF:
            break  # a URL to install from names no package (`cabal install http://host/x.tar.gz`), nor does "instead"
        # a version after the name: pip's ==, npm's @, gem's and Composer's name:version; pip's extras
        if not re.fullmatch(r"@?[A-Za-z][\w.\-]*(?:/[\w.\-]+)*(?:\[[\w,\-]+\])?(?:[<>=!~@^:][^\s]*)?", bare):
            if bare:
                break
            continue
        name = re.split(r"[<>=!~:\[]|(?<=.)@", bare, maxsplit=1)[0]
        if (
            re.search(r"\.(?:txt|toml|cfg|in|whl|gz|zip|lock|json)$", name)
            or "/" in name
            and not name.startswith("@")
            and not re.fullmatch(r"[a-z0-9][\w.\-]*/[a-z0-9][\w.\-]*", name)
            and not _MODULE_PATH_RE.fullmatch(name)
        ):
            if closing:
                break
            continue
        if name.lower() in NOT_PACKAGES:
            break
        off = word.find(bare)
        named = True
        yield _pkg(start + off, start + off + len(bare), name, bare[len(name) :].lstrip("=<>!~@:"))
        if closing or word[-1] in ",;.)?!":
            break


# ---------------------------------------------------------------------------------------------
# Resolution
# ---------------------------------------------------------------------------------------------


def _overlaps(a: _Cand, b: _Cand) -> bool:
    """True when two candidates share at least one character."""
    return a.start < b.end and b.start < a.end


def _inside(a: _Cand, b: _Cand) -> bool:
    """True when ``a`` lies within ``b``."""
    return b.start <= a.start and a.end <= b.end


def _clusters(cands: list[_Cand]) -> Iterator[list[_Cand]]:
    """Groups of transitively overlapping candidates, in text order."""
    group: list[_Cand] = []
    reach = -1
    for c in sorted(cands, key=lambda c: c.start):
        if group and c.start >= reach:
            yield group
            group = []
        group.append(c)
        reach = max(reach, c.end) if len(group) > 1 else c.end
    if group:
        yield group


def _resolve(cands: list[_Cand], text: str) -> list[_Cand]:
    """Resolve overlaps cluster by cluster (each cluster is small)."""
    out: list[_Cand] = []
    for group in _clusters(cands):
        out.extend(group if len(group) == 1 else _resolve_cluster(group, text))
    return out


def _resolve_cluster(cands: list[_Cand], text: str) -> list[_Cand]:
    """Resolve overlaps: commands contain anything, URLs contain SHAs, otherwise longest wins."""
    commands = _dedupe_same_kind([c for c in cands if c.kind == "command"])
    urls = _dedupe_same_kind([c for c in cands if c.kind == "url"])
    strong_pkgs = [c for c in cands if c.kind == "package" and not c.weak]
    files = [c for c in cands if c.kind == "file"]
    urls = [u for u in urls if not (u.weak and any(_overlaps(u, o) for o in strong_pkgs + files))]
    atoms: list[_Cand] = []
    not_symbols = {(k.start, k.end) for k in commands} | {s for k in commands if (s := _task_span(k, text))}
    for c in cands:
        if c.kind in ("command", "url"):
            continue
        if c.kind == "symbol" and (c.start, c.end) in not_symbols:
            continue
        if c.kind == "symbol" and _ARG_NAME_RE.fullmatch(text, c.start, c.end) and any(
                _inside(c, k) and c.start > k.start for k in commands) and text[c.start - 3 : c.start] != "-k ":
            continue  # a bare name a command takes (`mix phx.new my_app`), not pytest's `-k test_x`
        if c.kind == "package" and any(c.start == k.start or c.weak and _inside(c, k) for k in commands):
            continue  # a command's own name, or a known name it takes as an argument: no install
        host = next((u for u in urls if _overlaps(c, u)), None)
        sha_ok = c.kind == "commit" and _commit_in_url_ok(c, text)
        pkg_ok = c.kind == "package" and not c.weak and host is not None and _inside(host, c)
        if host is not None and not sha_ok and not pkg_ok:
            continue
        atoms.append(c)
    atoms.sort(key=lambda c: (-(c.end - c.start), -c.rank, c.weak, c.start))
    kept: list[_Cand] = []
    for c in atoms:
        if any(_overlaps(c, k) and (k.kind == c.kind or _conflict(c, k)) for k in kept):
            continue
        kept.append(c)
    return sorted(kept + urls + commands, key=lambda c: (c.start, c.end))


_ARG_NAME_RE = re.compile(r"[A-Za-z_]\w*")


def _task_span(command: _Cand, text: str) -> tuple[int, int] | None:
    """The span of the task a task runner runs (``mix ecto.create``): a name, not code."""
    m = _RUNNER_TASK_RE.match(text, command.start, command.end)
    return (m.start(2), m.end(2)) if m and m.group(1) in _TASK_RUNNERS else None


def _conflict(c: _Cand, k: _Cand) -> bool:
    """Whether a shorter candidate ``c`` must yield to an overlapping kept ``k`` of another kind."""
    if c.kind == "envvar" and k.kind == "symbol" and _inside(c, k):
        return False
    return not (
        c.kind == "package" and not c.weak and k.kind in ("error", "symbol") and not _inside(c, k)
    )


_SHA_LINK_RE = re.compile(r"\[([0-9a-f]{7,40})\]\([^)\s]*$")
# round 8 "link-sha": the link text may be backticked, abbreviated below 7 or behind a user (`` [`17a2cc9`](…) ``,
# `[d55bb](…/commit/d55bb21391f29a0)`, `[dron0gus@2318bd1](…)`): the URL's SHA is still the same commit
_SHA_LINK_8_RE = re.compile(r"\[(?:`|[\w.\-]+@)?([0-9a-f]{4,40})`?\]\([^)\s]*$")


def _commit_in_url_ok(c: _Cand, text: str) -> bool:
    """A SHA inside a URL counts when it is a full SHA or follows /commit(s)/, /tree/ or /blob/,
    unless it is the target of a markdown link whose text is the same commit (``[823b44c](...)``)."""
    rx = _SHA_LINK_RE if "link-sha" in _SHAPES_OFF else _SHA_LINK_8_RE
    link = rx.search(text, max(0, c.start - 300), c.start) if "](" in text else None
    if link is not None and text.startswith(link.group(1), c.start):
        return False
    if c.end - c.start == 40:
        return True
    return re.search(r"/(?:commits?|tree|blob)/$", text[max(0, c.start - 10) : c.start]) is not None


def _dedupe_same_kind(cands: list[_Cand]) -> list[_Cand]:
    """Keep the longest of overlapping candidates of one kind."""
    cands = sorted(cands, key=lambda c: (-(c.end - c.start), c.start))
    kept: list[_Cand] = []
    for c in cands:
        if not any(_overlaps(c, k) for k in kept):
            kept.append(c)
    return kept


# ---------------------------------------------------------------------------------------------
# Concepts
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=65536)
def _lemma(word: str) -> str:
    """A cheap lowercase singular form."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is", "ous")):
        return w[:-1]
    return w


def _concepts(doc: Any, text: str, taken: list[tuple[int, int]]) -> Iterator[_Cand]:
    """Short runs of content words (or noun chunks with a parser) not covered by code mentions."""
    covered = bytearray(len(text) + 1)
    for s, e in taken:
        covered[s:e] = b"\x01" * (e - s)
    if _PARSED:
        yield from _noun_chunk_concepts(doc, covered)
        return
    from spacy.attrs import IDX, IS_ALPHA, IS_STOP, LENGTH

    run: list[tuple[int, int]] = []
    for idx, alpha, stop, length in doc.to_array([IDX, IS_ALPHA, IS_STOP, LENGTH]).tolist():
        ok = (alpha and not stop and 1 < length <= MAX_WORD_CHARS and not covered[idx]
              and _content_word(text[idx : idx + length]))
        if ok and run and idx == run[-1][1] + 1 and len(run) < 3:
            run.append((idx, idx + length))
            continue
        if run:
            yield from _concept(text, run)
        run = [(idx, idx + length)] if ok else []
    if run:
        yield from _concept(text, run)


def _regex_concepts(text: str, taken: list[tuple[int, int]]) -> Iterator[_Cand]:
    """The blank-pipeline concept rule on regex words, used for very large texts."""
    _import_spacy()
    from spacy.lang.en.stop_words import STOP_WORDS

    covered = bytearray(len(text) + 1)
    for s, e in taken:
        covered[s:e] = b"\x01" * (e - s)
    run: list[tuple[int, int]] = []
    for m in _ALPHA_WORD_RE.finditer(text):
        s, e = m.span()
        ok = (1 < e - s <= MAX_WORD_CHARS and not covered[s]
              and m.group(0).lower() not in STOP_WORDS and _content_word(m.group(0)))
        if ok and run and s == run[-1][1] + 1 and len(run) < 3:
            run.append((s, e))
            continue
        if run:
            yield from _concept(text, run)
        run = [(s, e)] if ok else []
    if run:
        yield from _concept(text, run)


def _noun_chunk_concepts(doc: Any, covered: bytearray) -> Iterator[_Cand]:
    """Noun chunks without leading stopwords, when a parsed pipeline is available."""
    for chunk in doc.noun_chunks:
        toks = [
            (t.idx, t.idx + len(t))
            for t in chunk
            if not t.is_stop and t.is_alpha and not covered[t.idx] and _content_word(t.text)
        ]
        if toks and len(toks) <= 3:
            yield from _concept(doc.text, toks)


def _concept(text: str, toks: list[tuple[int, int]]) -> Iterator[_Cand]:
    """A concept candidate for a run of content words (a lone word needs four letters)."""
    if len(toks) > 1 or toks[0][1] - toks[0][0] > 3:
        words = " ".join(_lemma(text[s:e]) for s, e in toks)
        yield _Cand("concept", toks[0][0], toks[-1][1], words)


@lru_cache(maxsize=65536)
def _content_word(word: str) -> bool:
    """A word that can be part of a concept: not a verb form, not a generic or filler word; such
    words split runs, so a concept never starts, ends or pivots on one."""
    low = word.lower()
    lemma = _lemma(word)
    if len(lemma) < 3 or lemma in _VERBS or lemma in _GENERIC_WORDS or low in _VERBS:
        return False
    return not (len(word) > 4 and low.endswith("ed"))


# ---------------------------------------------------------------------------------------------
# Pipeline
# ---------------------------------------------------------------------------------------------

_NLP: Any = None
_NLP_DOCS = 0
_PARSED = False
_LOCK = threading.Lock()
_TOKEN_MATCH_RE = re.compile(
    r"""(?x)^(?:
        (?:~|\.{1,2}|@)?/?[\w.*+\-@]+(?:/[\w.*+\-@~]*)+(?::\d+){0,2}
      | [\w\-]+(?:(?:\.|::)[\w\-]+)+(?::\w+)?(?::\d+){0,2}(?:\(\))?
      | \$\{?\w+\}?
      | @?[\w.\-/]+(?:===|==|>=|<=|~=|!=|@)[\w.^~*\-"]+
      | _*[A-Za-z0-9]+(?:_+[A-Za-z0-9]+)+_*
      | \w+\(\)
      | \w+~\d+
      | --?[\w\-]+(?:=\S+)?
      | [A-Z][A-Z0-9_]*=\S+
    )$"""
)


def _import_spacy() -> Any:
    """spaCy without torch: thinc imports torch whenever it can (~190 MB of RSS and ~2.4 s in
    the owner) though neither the blank pipeline nor ``en_core_web_sm`` runs on it. torch is
    hidden during the first import only; a process that already loaded torch keeps it."""
    hide = "torch" not in sys.modules
    if hide:
        sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` -> ImportError
    try:
        import spacy
    finally:
        if hide and "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]
    return spacy


def _build_nlp() -> Any:
    """Create the spaCy pipeline: parser-based if ``en_core_web_sm`` is installed, else blank."""
    global _PARSED
    spacy = _import_spacy()

    nlp = None
    if spacy.util.is_package("en_core_web_sm"):
        try:
            nlp = spacy.load("en_core_web_sm", exclude=["ner", "lemmatizer"])
        except (OSError, ImportError, ValueError, KeyError):  # a broken model must not break us
            nlp = None
    if nlp is None:
        nlp = spacy.blank("en")
    _PARSED = "parser" in nlp.pipe_names
    tokenizer: Any = nlp.tokenizer
    tokenizer.token_match = _TOKEN_MATCH_RE.match
    nlp.max_length = max(nlp.max_length, CHUNK_CHARS * 2)
    return nlp


def _nlp(docs: int = 0) -> Any:
    """The process-wide pipeline, built on first use and rebuilt now and then to bound its vocab."""
    global _NLP, _NLP_DOCS
    with _LOCK:
        if _NLP is None or _NLP_DOCS > RESET_AFTER_DOCS:
            _NLP, _NLP_DOCS = _build_nlp(), 0
        _NLP_DOCS += docs
        return _NLP


def _sanitize(text: str) -> str:
    """Replace lone surrogates and NULs one-for-one so offsets are preserved."""
    if not isinstance(text, str):
        text = str(text)
    return _SURROGATE_RE.sub("\ufffd", text).replace("\x00", " ")


def _chunks(text: str) -> list[tuple[int, str]]:
    """Split long text at line (or space) boundaries into pieces of at most ``CHUNK_CHARS``."""
    if len(text) <= CHUNK_CHARS:
        return [(0, text)]
    out: list[tuple[int, str]] = []
    pos = 0
    while pos < len(text):
        end = min(len(text), pos + CHUNK_CHARS)
        if end < len(text):
            cut = text.rfind("\n", pos + CHUNK_CHARS // 2, end)
            if cut < 0:
                cut = text.rfind(" ", pos + CHUNK_CHARS // 2, end)
            end = cut + 1 if cut >= 0 else end
        out.append((pos, text[pos:end]))
        pos = end
    return out


# Round 9 (issue #18): a vocabulary of programs, installers and ecosystem files (vocabulary.py) in place of more
# shapes; each part is switched by name like round 8's shapes (bench/extraction_loso.py --rules --round 9):
# "programs", "installers", "files", "cmdlet", "lone-program", "specifier", "ivy", "lang-install", "dep-constraint",
# "module-missing", "solver", "spaced-prompt", "keywords", "apt-output"
_BASE_TABLES = {
    "SUBCOMMANDS": SUBCOMMANDS, "PLAIN_EXECUTABLES": PLAIN_EXECUTABLES, "EXECUTABLES": EXECUTABLES,
    "_ENGLISH_EXECUTABLES": _ENGLISH_EXECUTABLES, "_PROSE_EXECUTABLES": _PROSE_EXECUTABLES,
    "_PROSE_EXE_RE": _PROSE_EXE_RE, "_PROGRAM_NAMES": _PROGRAM_NAMES, "FILE_EXTS": FILE_EXTS,
    "_AMBIG_EXTS": _AMBIG_EXTS, "EXTENSIONLESS_FILES": EXTENSIONLESS_FILES, "_NAMED_FILE_RE": _NAMED_FILE_RE,
    "_NAMED_FILE_NEEDLES": _NAMED_FILE_NEEDLES, "_INSTALL_RE": _INSTALL_RE, "_CLOSING": "\"'",
}
_SUBGROUPS: dict[str, frozenset[str]] = {}
_CLOSING = "\"'"  # what closes a quoted command glued to its last word; with the vocabulary a backtick too


def _trie(words: Iterable[str]) -> str:
    """One regex alternative for many literal words with shared prefixes factored out: a long-first alternation
    of hundreds of names tries each at every position, a trie one branch per character."""
    tree: dict[str, Any] = {}
    for w in words:
        node = tree
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if "" in node:
            return "(?:" + "|".join(alts) + ")?" if alts else ""
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return emit(tree)


def _prose_exe_re(names: Iterable[str]) -> re.Pattern[str]:
    return re.compile(r"(?<![\w`$/.\-])(" + _trie(names) + r")(?=[ \t])")


def _named_file_re(names: frozenset[str]) -> re.Pattern[str]:
    return re.compile(r"(?<![\w./\-])(?P<path>" + _trie(names)
                      + r")(?P<line>(?::\d+){1,2}(?![\d/]))?(?![\w\-]|\.\w|/)")


def _vocabulary_tables() -> dict[str, Any]:
    """The tables with the vocabulary's programs, installers and files added."""
    t: dict[str, Any] = {}
    plain = PLAIN_EXECUTABLES
    subs = dict(SUBCOMMANDS)
    for name, sub in _vocab.PROGRAMS.items():
        if name in PLAIN_EXECUTABLES:
            continue  # a plain program keeps taking flags in prose (`gradle --version`)
        elif sub or name in subs:
            subs[name] = subs.get(name, frozenset()) | sub
        else:
            plain = plain | {name}
    english = _ENGLISH_EXECUTABLES | _vocab.ENGLISH_PROGRAMS
    t["SUBCOMMANDS"], t["PLAIN_EXECUTABLES"], t["_ENGLISH_EXECUTABLES"] = subs, plain, english
    t["EXECUTABLES"] = plain | frozenset(subs)
    t["_PROSE_EXECUTABLES"] = (frozenset(subs) - {"make", "go"}) | (
        plain - english - _words("sudo env py black next swift")) | _words("ruff")
    t["_PROSE_EXE_RE"] = _prose_exe_re(t["_PROSE_EXECUTABLES"] | {"make", "go"})
    t["_PROGRAM_NAMES"] = _PROGRAM_NAMES | (frozenset(_vocab.PROGRAMS) - _vocab.ENGLISH_PROGRAMS)
    t["_SUBGROUPS"] = {k.replace(" ", "-"): v for k, v in _vocab.SUBGROUPS.items()}
    t["_CLOSING"] = "\"'`"
    t["FILE_EXTS"] = FILE_EXTS | _vocab.FILE_EXTS
    t["_AMBIG_EXTS"] = _AMBIG_EXTS | _vocab.AMBIGUOUS_EXTS
    t["EXTENSIONLESS_FILES"] = EXTENSIONLESS_FILES | _vocab.FILE_NAMES
    t["_NAMED_FILE_RE"] = _named_file_re(t["EXTENSIONLESS_FILES"])
    t["_NAMED_FILE_NEEDLES"] = ("file", *sorted(n for n in t["EXTENSIONLESS_FILES"] if "file" not in n))
    installers = "|".join(
        re.escape(m).replace(r"\ ", r"[ \t]+") + r"(?:[ \t]+--?[a-z][\w\-]*)*[ \t]+(?:" + "|".join(map(re.escape, v.split()))
        + ")" for m, v in sorted(_vocab.INSTALLERS.items(), key=lambda kv: -len(kv[0])) if v)
    t["_INSTALL_RE"] = re.compile(r"\b(?:" + installers + r")\b(?![\-.]\w)|" + _INSTALL_RE.pattern)
    return t


_VOCAB_TABLES = _vocabulary_tables()
_VOCAB_PARTS = {"programs": ("SUBCOMMANDS", "PLAIN_EXECUTABLES", "EXECUTABLES", "_ENGLISH_EXECUTABLES",
                             "_PROSE_EXECUTABLES", "_PROSE_EXE_RE", "_PROGRAM_NAMES", "_SUBGROUPS", "_CLOSING"),
                "files": ("FILE_EXTS", "_AMBIG_EXTS", "EXTENSIONLESS_FILES", "_NAMED_FILE_RE", "_NAMED_FILE_NEEDLES"),
                "installers": ("_INSTALL_RE",)}


def _switch_shapes(off: frozenset[str]) -> None:
    """Switch shapes off by name (the leave-one-set-out bench); the vocabulary's parts rebind their tables."""
    global _SHAPES_OFF
    _SHAPES_OFF = off
    for part, names in _VOCAB_PARTS.items():
        for name in names:
            globals()[name] = _BASE_TABLES.get(name, {}) if part in off else _VOCAB_TABLES[name]
    for f in list(globals().values()):
        if hasattr(f, "cache_clear"):
            f.cache_clear()  # memoised answers may have read the tables


_CMDLET_RE = re.compile(r"(?<![\w\-$.])(?P<verb>[A-Z][a-z]{1,11}|[a-z]{2,12})-(?P<noun>[A-Z][A-Za-z]+|[a-z]{5,})(?![\w\-:.(])")
_CMDLET_ARGS_RE = re.compile(r"[^\n|;`\"]*")
_CMDLET_PARAM_RE = re.compile(r"(?:^|[ \t])[-–][A-Za-z]")
_CMDLET_VERBS = frozenset(_vocab.CMDLET_VERBS) | frozenset(v.lower() for v in _vocab.CMDLET_VERBS)
_CMDLET_HEAD_RE = re.compile(r"(?:^|\n)[ \t]*(?:[-+>*][ \t]+|PS[^\n>]*>[ \t]*|PS:[ \t]*|\d+\.[ \t]+)?$")
# "lone-program": a lone backticked program is a command only when its sentence runs it ("run `make`", "`make` failed")
_FAILED_AFTER_RE = re.compile(r"`?[ \t]+(?:failed|fails|exited|crashed|errored)\b")
# "specifier": Deno's and JSR's `npm:name@version` / `jsr:@scope/name` specifiers are packages as written
_SPECIFIER_RE = re.compile(r"(?<![\w.\-/@])(?:npm|jsr):@?[a-z][\w.\-]*(?:/[\w.\-]+)?(?:@[\^~<>=]*[\w.\-+*]+)?"
                           r"(?<![.\-])")
# "ivy": an Ivy/sbt module id `org#name;revision`
_IVY_RE = re.compile(r"(?<![\w.#])[A-Za-z][\w.\-]*#[A-Za-z][\w.\-]*;[\w.\-+]+(?<![.\-])")
# "lang-install": installs written in the language: Julia's `Pkg.add("X")` and Pkg REPL `pkg> add X`, R's
# `install.packages("x")`, `remotes::install_github("a/b")`, `BiocManager::install("x")`, `library(x)`
_LANG_INSTALL_RE = re.compile(
    r"\b(?:Pkg\.(?:add|rm|update|develop|build|test)|install\.packages|(?:remotes|devtools|pak)::install_(?:github|cran|"
    r"gitlab|bitbucket|local|version)|BiocManager::install|pak::pkg_install|(?<![\w.])library|(?<![\w.])requireNamespace)"
    r"\((?:c\(|\[)?[ \t]*(?P<q>[\"'])?(?P<name>[A-Za-z][\w.\-]*(?:/[\w.\-]+)?)(?(q)(?P=q))")
_PKG_REPL_RE = re.compile(r"(?m)\bpkg> (?P<cmd>(?:add|rm|remove|up|update|dev|develop|build|test|pin|free)"
                          r"(?P<names>(?:[ \t]+[A-Za-z][\w.]*(?:@[\w.]+)?)+))[ \t]*$")
# "dep-constraint": a resolver's "depends on X ^1.6.2" / "X >= 1.0.2" / "X from git" (pub, LuaRocks, cabal, npm)
_DEP_CONSTRAINT_RE = re.compile(r"\bdepends on (?P<name>[A-Za-z][\w.\-]*[A-Za-z0-9])(?= (?:\^|[<>=~]=?|~>)"
                                r"[ \t]*v?\d| v?\d+\.\d| from (?:git|hosted|path|sdk)\b)")


# "module-missing": a resolver or compiler naming the module or package it cannot find: `Cannot find package 'open'`
# (Node, Bun, Go), OCaml's `Unbound module Core_kernel`, Nim's `cannot open 'httpclient'` (no path: a path is a file)
_MODULE_MISSING_RE = re.compile(
    r"(?i:\bcannot find package)[ \t]+['\"](?P<a>@?[a-z][\w.\-]*(?:/[\w.\-]+)*)['\"]|\bUnbound module (?P<b>[A-Z][\w.]*)\b|"
    r"\bcannot open ['\"](?P<c>[a-z][\w]*)['\"]")
# "solver": cabal's and opam's solver lines: `trying: x-1.2 (dependency of y)`, `rejecting: ghc-7.6.3/installed-…`,
# `next goal: x (dependency of y)`, `conflict set: a, b`, `(conflict: a => b>=1)`, `[required by y]`
_SOLVER_HEAD_RE = re.compile(r"\b(?:trying|rejecting|next goal|conflict set|conflict):[ \t]+")
_SOLVER_NAME_RE = re.compile(r"(?P<name>[A-Za-z]\w*(?:-[A-Za-z]\w*)*(?:-\d[\w.]*|[<>=]=?\d[\w.]*)?)(?:/installed-[\w.]*)?"
                             r"(?P<sep>,[ \t]*| => )?")
_SOLVER_OF_RE = re.compile(r"[(\[](?:dependency of|required by) (?P<name>[A-Za-z]\w*(?:-[A-Za-z]\w*)*(?:-\d[\w.]*)?)[)\]]")
# R's messages quote a package in curly quotes: "installation of package ‘tibble’", "dependency ‘sf’ is not available"
_R_PACKAGE_RE = re.compile(r"\b(?:package|dependency|called) ‘(?P<name>[A-Za-z][\w.]*)’")
# "apt-output": apt's own lines name a package: "x is already the newest version (v)", "Setting up x (v) ...",
# "Unpacking x (v) over (w) ...", "Selecting previously unselected package x."
_APT_OUTPUT_RE = re.compile(r"(?m)^[ \t]*(?:(?P<a>[a-z0-9][\w.+\-]*) is already the newest version\b|"
                            r"(?:Setting up|Unpacking) (?P<b>[a-z0-9][\w.+\-]*)(?::\w+)? \(|"
                            r"Selecting previously unselected package (?P<c>[a-z0-9][\w.+\-]*)\.)")
# "spaced-prompt": a prompt with a space before its `$`/`#`: `~ $ opam install x`, `pi@host:~ $ …`, `~/src $ …`
_SPACED_PROMPT_RE = re.compile(r"[ \t]*(?:[\w.\-]+@[\w.\-]+:)?~[\w/.\-]*[ \t]+[$#%][ \t]+"
                               r"(?P<cmd>(?:[A-Z_][A-Z0-9_]*=\S*[ \t]+)*[a-z./~][^\n]*?)[ \t]*$")


def _scan_vocabulary(text: str) -> Iterator[_Cand]:
    """Round 9: cmdlets, module specifiers, Ivy ids, installs written in Julia and R, resolver constraints."""
    off = _SHAPES_OFF
    has = _Has(text)
    for m in _CMDLET_RE.finditer(text) if "-" in text and "cmdlet" not in off else ():
        lower = m.group("verb").islower()
        if m.group("verb") not in _CMDLET_VERBS or lower != m.group("noun").islower():
            continue
        cmd = m.group(0)
        head = _CMDLET_HEAD_RE.search(text, 0, m.start()) is not None or text[m.start() - 1 : m.start()] == "`"
        if not head and not text.startswith(" -", m.end()):
            continue  # a cmdlet in prose is a command with its parameters, or heading its line
        a = _CMDLET_ARGS_RE.match(text, m.end())
        args = a.group(0).rstrip(" \t.,)") if a else ""
        if lower and not _CMDLET_PARAM_RE.search(args):
            continue  # lower case only with a parameter: `set-executionpolicy bypass –scope process`
        yield _Cand("command", m.start(), m.end() + len(args), cmd)
        name = args.split()[0] if args.split() else ""
        if cmd.title() in _vocab.CMDLET_INSTALLS and re.fullmatch(r"[A-Za-z][\w.\-]*", name):
            at = text.index(name, m.end())
            yield _pkg(at, at + len(name), name)
    for m in _SPECIFIER_RE.finditer(text) if has("npm:", "jsr:") and "specifier" not in off else ():
        yield _Cand("package", m.start(), m.end(), m.group(0), "")
    for m in _IVY_RE.finditer(text) if "#" in text and ";" in text and "ivy" not in off else ():
        yield _Cand("package", m.start(), m.end(), m.group(0), "")
    if "lang-install" not in off:
        for m in _LANG_INSTALL_RE.finditer(text) if "(" in text and has("Pkg.", "install", "library(", "Namespace(") else ():
            if m.group("q") or text.startswith("library", m.start()):  # `install.packages(p)` passes a variable
                yield _pkg(m.start("name"), m.end("name"), m.group("name"))
        for m in _PKG_REPL_RE.finditer(text) if "pkg> " in text else ():
            yield _Cand("command", m.start("cmd"), m.end("cmd"), "pkg " + m.group("cmd").split()[0])
            base = m.start("names")
            for t in re.finditer(r"[A-Za-z][\w.]*", m.group("names")):
                yield _pkg(base + t.start(), base + t.end(), t.group(0))
    for m in _DEP_CONSTRAINT_RE.finditer(text) if "depends on " in text and "dep-constraint" not in off else ():
        yield _pkg(m.start("name"), m.end("name"), m.group("name"))
    for m in _MODULE_MISSING_RE.finditer(text) if has("annot find package", "Unbound module", "cannot open") and (
            "module-missing" not in off) else ():
        g = m.lastgroup or "a"
        yield _pkg(m.start(g), m.end(g), m.group(g))
    if "solver" not in off and has(": ", "dependency of", "required by"):
        for m in _SOLVER_HEAD_RE.finditer(text):
            n = _SOLVER_NAME_RE.match(text, m.end())
            while n is not None:
                yield _Cand("package", n.start("name"), n.end("name"), n.group("name"), "")
                n = _SOLVER_NAME_RE.match(text, n.end()) if n.group("sep") else None
        for m in _SOLVER_OF_RE.finditer(text):
            yield _Cand("package", m.start("name"), m.end("name"), m.group("name"), "")
    for m in _APT_OUTPUT_RE.finditer(text) if has("newest version", "Setting up ", "Unpacking ", "unselected package") and (
            "apt-output" not in off) else ():
        g = m.lastgroup or "a"
        yield _pkg(m.start(g), m.end(g), m.group(g))
    for m in _R_PACKAGE_RE.finditer(text) if "‘" in text and "lang-install" not in off else ():
        yield _pkg(m.start("name"), m.end("name"), m.group("name"))


# Round 10 (issue #18): names the sentence or the tool's own output marks as dependencies, judged leave-one-set-out
# over dev … dev8 (bench/extraction_loso.py --rules --round 10), each behind a literal cue.
_R10_NAME = r"`?(?P<{g}>@?[A-Za-z][\w.\-]*(?:/[\w.\-]+)*[A-Za-z0-9])`?"
# "dep-list": a list of names a verb adds, removes or upgrades as dependencies: "Remove jQuery, Popper, and Axios
# dependencies", "Upgrade syn, proc-macro2, quote and heck crates"
_DEP_LIST_RE = re.compile(
    r"(?i:\b(?:add|remov|drop|upgrad|updat|bump|vendor|pin|replac)\w*)[ \t]+(?:the[ \t]+)?(?P<names>"
    r"`?[A-Za-z@][\w.\-/]*`?(?:[ \t]*,[ \t]*`?[A-Za-z@][\w.\-/]*`?)+,?[ \t]+and[ \t]+`?[A-Za-z@][\w.\-/]*`?)[ \t]+"
    r"(?i:dependencies|deps|crates|gems|packages|libraries|modules|plugins)\b")
_DEP_NOUN_RE = re.compile(r"(?i)dependencies|deps|crates|gems|packages|libraries|modules|plugins")
_NOT_LISTED = NOT_PACKAGES | _STOP_WORDS
_LIST_NAME_RE = re.compile(r"`?(?P<name>@?[A-Za-z][\w.\-]*(?:/[\w.\-]+)*[A-Za-z0-9])`?")
# "switch-from": a changelog entry moving from one name to another: "- Switch from istanbul to nyc", "* Switch from
# using Flake8 to using Ruff", "- BREAKING: Migrate date utilities from previously using moment to now using dayjs";
# prose about tools ("we've spent the past year migrating projects from Webpack to Vite") is no such entry, nor a
# move between functions ("Move from urlparse to parse_url"), and a
# product of two words ("Travis CI", "GitHub Actions") does not end where the shape needs its name to
_SWITCH_FROM_RE = re.compile(
    r"(?m)^[ \t]*(?:[-*•+][ \t]+)?(?:[a-z]+(?:\([^)\n]*\))?!?:[ \t]+)?(?:BREAKING(?: CHANGE)?:[ \t]+)?"
    r"(?i:(?:switch|migrate|move|port|transition)(?:e?d)?)(?:[ \t]+[\w\-]+){0,3}?[ \t]+from[ \t]+"
    r"(?:(?:\w+ly[ \t]+)?using[ \t]+)?" + _R10_NAME.format(g="a") + r"[ \t]+to[ \t]+(?:(?:\w+[ \t]+)?using[ \t]+)?"
    + _R10_NAME.format(g="b") + r"(?=[ \t]*(?:[.,;:)(]|$)|[ \t]+(?:for|to|because|since|as|in|and)\b)")
# "artifact": the Maven coordinate a resolver could not fetch, as printed: `Could not find artifact
# org.rubygems:haml:jar:3.1.7 in central`, Gradle's `Artifact 'com.google.guava:guava:11.0.2@jar' not found`
_ARTIFACT_RE = re.compile(r"(?i:\bartifact|could not resolve)[ \t]+['\"]?(?P<name>[A-Za-z][\w.\-]*:[A-Za-z][\w.\-]*"
                          r"(?::[\w.\-@]*\w)+)")
# "dep-table": a dependency table row, name then versions: `| pulldown-cmark | 0.12 | 0.13.0 | minor |`
_DEP_TABLE_RE = re.compile(r"(?m)^[ \t]*\|[ \t]*`?(?P<name>@?[A-Za-z][\w.\-]*(?:/[\w.\-]+)*[A-Za-z0-9])`?[ \t]*\|"
                           r"[ \t]*v?\d[\w.\-]*[ \t]*\|[ \t]*v?\d")
# "rebar3": rebar3's own lines name packages: `===> Compiling cuttlefish`, `{pkg,<<"hackney">>,<<"1.3.2">>}`,
# `Plugin pc not available`, `Missing plugins: [rebar3_hex]`
_REBAR3_RE = re.compile(r"(?m)^===> (?:Compiling|Fetching|Upgrading|Unlocking|Linking) (?P<a>[a-z]\w*)(?![\w.\-/])|"
                        r"\{pkg,[ \t]*<<\"(?P<b>[a-z]\w*)\">>|\bPlugin (?P<c>[a-z]\w*) not available\b|"
                        r"\bMissing plugins: \[(?P<list>[a-z]\w*(?:,[ \t]*[a-z]\w*)*)\]")
# "env-named": the quoted ALL_CAPS names of a sentence about environment variables are env vars
# (``PROGRAMDATA``, ``APPDATA``; "host environment variable `STAGE`")
_ENV_NAMED_RE = re.compile(r"(?P<q>``|[`'\"])(?P<name>[A-Z][A-Z0-9_]{2,})(?P=q)")
# "manifest-file": manifest names whose extension reads as an attribute: `rebar.config`, `web.config`
_MANIFEST_FILE_RE = re.compile(r"(?<![\w./\\\-])(?P<name>(?i:rebar\.config|web\.config|app\.config|nuget\.config|"
                               r"packages\.config|sys\.config|vm\.args))(?![\w\-]|\.\w)")
# "import-line": an import of a module path on a source line, behind a compiler's gutter too (Gleam's
# `6 │ import tiramisu/primitive`, `import lustre/internals/patch.{type Patch}`), and "add import X" (`-add import RxSwift`)
_IMPORT_PATH_RE = re.compile(r"(?m)^[ \t]*(?:\d+[ \t]*[│|][ \t]*)?import[ \t]+(?P<a>[a-z_]\w*(?:/[a-z_]\w*)+)(?=[ \t]*$|\.\{)|"
                             r"\b(?i:add(?:ed|ing|s)?)[ \t]+import[ \t]+`?(?P<b>[A-Za-z_]\w*)`?(?=[ \t]+(?:to|in|for)\b|[ \t]*$)")
# "prose-import": a backticked module a sentence imports, and the one it imports it from: "Trying to import
# `gleam/string_builder`", "import the module `gleam`", "Update import for `pretty-format`", "Allow importing `moment`
# directly from `moment-parseplus`"; Rust's "unresolved import `a::B`" quotes a path, a symbol
_PROSE_IMPORT_RE = re.compile(
    r"(?<!unresolved )\b(?i:import(?:s|ed|ing)?)[ \t]+(?:for[ \t]+|the[ \t]+(?:module|package|library|crate)[ \t]+)?"
    r"`(?P<a>@?[a-z][\w.\-]*(?:/[\w.\-]+)*)`(?:[ \t]+(?:directly[ \t]+)?from[ \t]+`(?P<b>@?[a-z][\w.\-]*(?:/[\w.\-]+)*)`)?")
# "pkg-noun": a name the sentence calls a gem, crate, package, library or plugin: "moved to the rubocop-rails gem",
# "the readline package was removed"; "the pip package name", "the root package" are not
_PKG_NOUN_RE = re.compile(r"\bthe[ \t]+(?P<q>`?)(?P<name>[a-z][\w.\-]*[a-z0-9])(?P=q)[ \t]+(?:gem|crate|package|library|plugin)\b"
                          r"(?![ \t]*(?:names?|managers?|versions?|registry|index|cache|files?|authors?|maintainers?|lists?|"
                          r"json|\.json|directory|folder|root)\b)")
# "error-code": a quoted ALL_CAPS code said to be an error code or an error: `triggers error with code
# "MODULE_INVALID"`, "promotes `UNRESOLVED_IMPORT` to a hard error"; an identifier a compiler quotes stays a symbol
# (`error C2065: 'SO_MARK'`, heldout2 decision 1)
_ERROR_CODE_RE = re.compile(r"\bcode[ \t:=]+(?P<q>[`\"'])(?P<a>[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?P=q)|"
                            r"(?P<r>[`\"'])(?P<b>[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?P=r)[ \t]+(?:to[ \t]+an?[ \t]+(?:\w+[ \t]+)?)?"
                            r"error\b")
# "win-set": cmd.exe's `set NAME=value` heading a line or after a drive prompt is a command:
# `D:\\QG>set PYTHONPATH=${PYTHONPATH}:D:\\QG\\SourcePackages`, `set SECRE_KEY=replace-this-text`
_WIN_SET_RE = re.compile(r"(?m)(?:^[ \t]*|(?<=>))(?P<cmd>set[ \t]+[A-Za-z_]\w*=[^\s\"'`]+)[ \t]*$")


def _scan_dependency_cues(text: str) -> Iterator[_Cand]:
    """Round 10: dependency lists and moves, resolver and build-tool output, environment-variable and manifest names."""
    off = _SHAPES_OFF
    has = _Has(text)
    not_names = _NOT_LISTED
    for m in _DEP_LIST_RE.finditer(text) if " and " in text and has(", ") and _DEP_NOUN_RE.search(text) and (
            "dep-list" not in off) else ():
        for n in _LIST_NAME_RE.finditer(m.group("names")):
            if n.group("name").lower() not in not_names:
                yield _pkg(m.start("names") + n.start("name"), m.start("names") + n.end("name"), n.group("name"))
    for m in _SWITCH_FROM_RE.finditer(text) if " from " in text and " to " in text and "switch-from" not in off else ():
        names = [m.group(g) for g in "ab"]
        if not any(n.lower() in not_names or "_" in n for n in names):  # `parse_url` is a function
            for g in "ab":
                yield _pkg(m.start(g), m.end(g), m.group(g))
    for m in _ARTIFACT_RE.finditer(text) if ":" in text and has("rtifact", "resolve") and "artifact" not in off else ():
        yield _Cand("package", m.start("name"), m.end("name"), m.group("name"), "")
    for m in _DEP_TABLE_RE.finditer(text) if "|" in text and "dep-table" not in off else ():
        yield _pkg(m.start("name"), m.end("name"), m.group("name"))
    if "rebar3" not in off and has("===> ", "{pkg,", "Plugin ", "Missing plugins"):
        for m in _REBAR3_RE.finditer(text):
            g = m.lastgroup or "a"
            for n in re.finditer(r"[a-z]\w*", m.group(g)):
                yield _pkg(m.start(g) + n.start(), m.start(g) + n.end(), n.group(0))
    if "env-named" not in off and "nvironment variable" in text:
        for m in _ENV_NAMED_RE.finditer(text):
            yield _Cand("envvar", m.start("name"), m.end("name"), m.group("name"))
    for m in _MANIFEST_FILE_RE.finditer(text) if has(".config", ".Config", ".CONFIG", "vm.args") and (
            "manifest-file" not in off) else ():
        yield _Cand("file", m.start("name"), m.end("name"), m.group("name"))
    for m in _IMPORT_PATH_RE.finditer(text) if "import " in text and "import-line" not in off else ():
        g = m.lastgroup or "a"
        yield _pkg(m.start(g), m.end(g), m.group(g))
    for m in _PROSE_IMPORT_RE.finditer(text) if "`" in text and "prose-import" not in off and has("import", "Import") else ():
        for g in "ab":
            if m.group(g):
                yield _pkg(m.start(g), m.end(g), m.group(g))
    for m in _PKG_NOUN_RE.finditer(text) if "the " in text and "pkg-noun" not in off and has(
            " gem", " crate", " package", " librar", " plugin") else ():
        if m.group("q") or _package_shaped(m.group("name")):
            yield _pkg(m.start("name"), m.end("name"), m.group("name"))
    for m in _WIN_SET_RE.finditer(text) if "set " in text and "=" in text and "win-set" not in off else ():
        yield _Cand("command", m.start("cmd"), m.end("cmd"), _command_norm(m.group("cmd")))
    for m in _ERROR_CODE_RE.finditer(text) if "_" in text and "error-code" not in off and has("code", "error") else ():
        g = m.lastgroup or "a"
        yield _Cand("error", m.start(g), m.end(g), m.group(g))


_SCANNERS: tuple[Callable[[str], Iterable[_Cand]], ...] = (
    _scan_files,
    _scan_urls,
    _scan_commits,
    _scan_errors,
    _scan_symbols,
    _scan_envvars,
    _scan_packages,
    _scan_marked_commands,
    _scan_shell_lines,
    _scan_prose_commands,
    _scan_install_args,
    _scan_vocabulary,
    _scan_dependency_cues,
)
_switch_shapes(frozenset())


def _propagate_packages(cands: list[_Cand], text: str) -> Iterator[_Cand]:
    """Bare repeats of a name that the same text pins, installs or imports are that package."""
    names = {
        text[c.start : c.end]: c.norm
        for c in cands
        if c.kind == "package" and not c.weak and c.end - c.start <= 60
    }
    strong = {n.split("@")[0].split("==")[0] for n in names if n[:1].isalpha()}
    for name in strong:
        if len(name) < 3 or name.lower() in NOT_PACKAGES:
            continue
        for m in re.finditer(r"(?<![\w.@\-/])" + re.escape(name) + r"(?![\w@\-/]|\.\w)", text):
            yield _pkg(m.start(), m.end(), name, weak=True)


def _extract_doc(doc: Any, text: str, concepts: bool) -> list[_Cand]:
    """All resolved candidates for one spaCy doc whose text is ``text``."""
    cands: list[_Cand] = []
    for scan in _SCANNERS:
        cands.extend(scan(text))
    cands.extend(_propagate_packages(cands, text))
    resolved = [c for c in _resolve(cands, text) if 0 < c.end - c.start <= MAX_MENTION_CHARS]
    resolved.sort(key=lambda c: (c.start, c.end))
    if concepts:
        taken = [(c.start, c.end) for c in resolved]
        found = _concepts(doc, text, taken) if doc is not None else _regex_concepts(text, taken)
        resolved.extend(found)
    return resolved


def _to_mentions(text: str, cands: Iterable[_Cand], offset: int) -> list[Mention]:
    """Turn candidates into mentions with absolute offsets."""
    out = []
    for c in cands:
        s, e = c.start + offset, c.end + offset
        out.append(Mention(c.kind, text[s:e], s, e, c.norm, c.detail, c.kind == "symbol" and c.weak))
    return out


def extract(text: str, *, concepts: bool = True, bare: bool = False) -> list[Mention]:
    """Extract entity mentions from one text, sorted by start offset (``bare``: see extract_many)."""
    return extract_many([text], concepts=concepts, bare=bare)[0]


def extract_many(texts: Iterable[str], *, concepts: bool = True,
                 bare: bool = False) -> list[list[Mention]]:
    """Extract mentions from many texts at once, using ``nlp.pipe`` for tokenization.

    ``bare``: also give the CamelCase names with no code cue (``Mention.bare``). By the symbol
    definition of #18 such a name is a symbol only if the code index knows it, so the text alone
    does not make it one; callers that link against the index ask for them and let it decide."""
    clean = [_sanitize(t) for t in texts]
    pieces: list[tuple[int, int, str]] = []
    for i, t in enumerate(clean):
        pieces.extend((i, off, chunk) for off, chunk in _chunks(t) if chunk)
    results: list[list[Mention]] = [[] for _ in clean]
    if not pieces:
        return results
    tokenized = [p for p in pieces if concepts and len(clean[p[0]]) <= LARGE_TEXT]
    nlp = _nlp(len(tokenized)) if tokenized else None
    docs = iter(nlp.pipe((p[2] for p in tokenized), batch_size=256)) if nlp else iter(())
    for i, off, chunk in pieces:
        doc = next(docs) if concepts and len(clean[i]) <= LARGE_TEXT else None
        cands = _extract_doc(doc, chunk, concepts)
        if not bare:
            cands = [c for c in cands if not (c.weak and c.kind == "symbol")]
        results[i].extend(_to_mentions(clean[i], cands, off))
    for res in results:
        res.sort(key=lambda m: (m.start, m.end, m.kind))
    return results


# ---------------------------------------------------------------------------------------------
# Keyword terms (pure Python)
# ---------------------------------------------------------------------------------------------

_TERM_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")


def code_terms(text: str) -> list[str]:
    """Split identifiers into lowercase words: ``parseConfig`` -> ``["parse", "config"]``."""
    terms: list[str] = []
    for word in re.findall(r"[A-Za-z0-9]+", text or ""):
        terms.extend(p.lower() for p in _TERM_RE.findall(word))
    return terms
