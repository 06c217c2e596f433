"""The extraction rules of issue #18, each on a line of the fresh set's dev half or of the second
dev set, by its id (bench/data/extraction-fresh/dev.jsonl ``x...``, dev2.jsonl ``z...``, dev3.jsonl
``h2-...``, the second held-out set once it had been looked at; dev4.jsonl ``h3-...``, the third, likewise;
dev5.jsonl ``h4-...``, the fourth, likewise; a held-out set is never used in tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.extract.text import extract

FRESH = Path(__file__).resolve().parents[2] / "bench" / "data" / "extraction-fresh"
LINES = {r["id"]: r["text"] for split in ("dev", "dev2", "dev3", "dev4", "dev5")
         for r in map(json.loads, (FRESH / f"{split}.jsonl").read_text(encoding="utf-8").splitlines())}


def found(line_id: str, kind: str) -> list[str]:
    return [m.text for m in extract(LINES[line_id], concepts=False) if m.kind == kind]


# (dev line, kind, every surface of that kind the line must give, in order)
FINDS = [
    # A file's :line:col is the mention's location, not part of the file.
    ("x070", "file", ["test/test_combined_transcript_link.py"]),
    ("x082", "file", ["vercel.json", "vercel.json"]),
    # host:port after Java's '/' and before ': message'; no trailing sentence dot.
    ("x183", "url", ["192.168.56.85:8250", "192.168.56.85:34012"]),
    ("x001", "url", ["127.0.0.1:12345/dolphinscheduler"]),
    # Chains split into commands; a command keeps its subcommand words.
    ("x118", "command", ["uv tool uninstall coderabbit-review-extractor", "uv cache clean",
                         "uv tool install ."]),
    ("x041", "command", ["which node", 'echo "Node: $(node --version)"', 'echo "Node not found"']),
    ("x276", "command", ["source .venv/bin/activate", "ruff check deep_manifest/"]),
    ("x265", "command", ["npm audit fix --force"]),
    # A line that is nothing but a command, after a list number, '> ' or a prompt.
    ("x221", "command", ["sleep 2"]),
    ("x068", "command", ["make db-update"]),
    ("x032", "command", ["cd laravel"]),
    ("x106", "command", ["webpack -p"]),
    ("x191", "command", ["mix ecto.create"]),
    # Code-like names the old rules missed.
    ("x256", "symbol", ["version"]),  # `nil:NilClass` is how Ruby prints the receiver
    ("x081", "symbol", ["Ecto.Adapter.json_library/0"]),
    ("x016", "error", ["reportUnknownVariableType"]),
    # Packages by shape and by the verbs of other package managers.
    ("x145", "package", ["@loopback/core", "@loopback/authentication"]),
    ("x087", "package", ["org.springframework.boot:spring-boot-maven-plugin:2.1.0.RELEASE"]),
    ("x047", "package", ["Spring-boot"]),
    ("x058", "package", ["PHPUnit"]),
    ("x064", "package", ["cloudstack-agent"]),
    ("x033", "package", ["fun_with_flags"]),
    ("x000", "package", ["coderabbit-review-extractor"]),
    ("x002", "package", ["php-school/learn-you-php"]),
    # Error codes after error/warning, caught tuples, 'error code N'.
    ("x004", "error", ["CS0246"]),
    ("x155", "error", ["E0503", "E0592"]),
    ("x072", "error", ["OSError", "zipfile.BadZipFile"]),
    ("x161", "error", ["error code 255"]),
    # git commit's own output.
    ("x192", "commit", ["2564804"]),
    # A pytest node id is a file and the test's `Class::test` symbol.
    ("x037", "file", ["test_combined_transcript_link.py"]),
    ("x037", "symbol", ["TestCombinedTranscriptLink::test_combined_link_css_styling"]),
    # A package.json dependency entry.
    ("x051", "package", ["react"]),
    # webpack's loader naming, a backticked module said to be imported.
    ("x039", "package", ["ts-loader", "typescript@1.8.10"]),
    ("x245", "package", ["os"]),
    # A quoted install command ends at its closing backtick: the next word is prose.
    ("x154", "package", []),    # An exception type keeps a capitalised, PHP or Ruby namespace and is an error, not a symbol;
    # Ruby's uncaught `... (Mod::Class)`; a code quoted after "error"; a type checker's rule.
    ("z163", "error", ["System.NullReferenceException"]),
    ("z166", "error", ["Symfony\\Component\\Debug\\Exception\\FatalThrowableError"]),
    ("z092", "error", ["Bundler::VersionConflict"]),
    ("z093", "error", ["Bundler::VersionConflict"]),
    ("z148", "error", ["NU1102"]),
    ("z336", "error", ["reportUnknownArgumentType"]),
    # A PHP namespace path is one symbol, not its last CamelCase part.
    ("z191", "symbol", ["Illuminate\\Foundation\\ComposerScripts::postAutoloadDump"]),
    ("z175", "symbol", ["Morrislaptop\\LaravelFivePackageBridges\\Application"]),
    # NuGet/Composer "package X", Gradle plugin ids, a resolver's report, a backticked name and its
    # version, a dependabot bump in a changelog list; a Maven version ends before the full stop.
    ("z146", "package", ["Microsoft.SourceLink.GitHub"]),
    ("z190", "package", ["box/spout"]),
    ("z054", "package", ["com.android.application"]),
    ("z088", "package", ["rack", "rails"]),
    ("z116", "package", ["phoenix_live_view", "phoenix"]),
    ("z317", "package", ["symfony/console"]),
    ("z049", "package", ["org.jetbrains.kotlin:kotlin-gradle-plugin:1.2.51"]),
    # A command's arguments are packages only after an install verb (a flag may stand before it);
    # a prompt's user@host is no name@version; a quoted command ends at its quote and comma.
    ("z205", "package", ["vite@latest"]),
    ("z234", "package", []),
    ("z223", "package", ["celery", "celery"]),  # `pip --user install celery`
    # A backticked name said to be a dependency, a dotted name said to be a package.
    ("z328", "package", ["atty"]),
    ("z334", "package", ["Cabinet.Presentation"]),
    # A package manager's progress line keeps its meaning behind a CI runner's `[job] | ` prefix.
    ("z351", "package", ["ruff"]),
    # A quoted requirement, a name added to the dependencies, a missing type library.
    ("z158", "package", ["Microsoft.NETCore.App"]),
    ("z133", "package", ["livefilter"]),
    ("z200", "package", ["vite/client"]),
    # R scripts and Phoenix templates are files, not dotted symbols.
    ("x030", "file", ["test_posterior.R"]),
    ("z114", "file", ["foo.html.heex"]),
    ("z156", "package", []),
    ("z144", "package", ["live_toast", "live_toast", "live_toast"]),
    # Round 7's grammars. One installer grammar: flags before the name, `go get`, pip extras as printed.
    ("h4-0013", "package", ["github.com/dprotaso/modlog"]),
    ("h4-0203", "package", ["just"]),
    ("h4-0303", "package", ["discord.py[voice]"]),
    # One manifest-line grammar: go.mod, Gradle configurations, `apply plugin`, gemspec, Cargo.toml,
    # Maven's maven-*-plugin, Bundler frames, mix's `==> app (compile)`.
    ("h4-0030", "package", ["gopkg.in/yaml.v3"]),
    ("h4-0085", "package", ["golang.org/x/oauth2"]),
    ("h4-0260", "package", ["net.cfh.vault:VaultUnlocked:2.18.3"]),
    ("h4-0166", "package", ["kotlin-android-extensions"]),
    ("h4-0407", "package", ["bundler"]),
    ("h2-0036", "package", ["zi"]),
    ("h3-0026", "package", ["maven-surefire-plugin"]),
    ("h4-0090", "package", ["maven-jar-plugin:2.4"]),
    ("h2-0369", "package", ["rake-hooks"]),
    ("h4-0155", "package", ["actionpack"]),
    ("h4-0080", "package", ["poolboy"]),
    # One dependency-update grammar: any case, backticks optional, (from A) to B, "dependency X".
    ("h4-0399", "package", ["js-yaml"]),
    ("h4-0124", "package", ["phoenix_live_dashboard"]),
    ("h4-0123", "package", ["ecto"]),
    ("h4-0371", "package", ["semantic-release"]),
    ("h4-0379", "package", ["github.com/giantswarm/microerror"]),
    ("h4-0177", "package", ["github.com/bytedance/sonic"]),
    ("h4-0153", "package", ["rubocop"]),
    ("h4-0140", "package", ["cbapi"]),
    # Swaps: replace X with Y, use X instead of Y, X in favor of Y, move X to devDependencies.
    ("h4-0067", "package", ["flake8", "ruff"]),
    ("h4-0026", "package", ["erlef/setup-beam", "erlef/setup-elixir"]),
    ("h4-0126", "package", ["pipenv", "pip-tools"]),
    ("h4-0006", "package", ["chai"]),
    # Resolvers: every name a resolver line mentions, Composer's constraints, Swift's `no such module`.
    ("h4-0292", "package", ["package-A", "package-B"]),
    ("h2-0298", "package", ["mylib", "opentelemetry-instrumentation-logging", "mylib"]),
    ("h4-0017", "package", ["laravel/framework"]),
    ("h4-0370", "package", ["sbamtr/laravel-source-encrypter", "sbamtr/laravel-source-encrypter[1.4.0]"]),
    ("h2-0396", "package", ["pattern-lab/unified-asset-installer", "composer-plugin-api"]),
    ("h3-0178", "package", ["PackageDescription"]),
    ("h4-0344", "package", ["PackageDescription"]),
    # A single word in markdown emphasis: prose, or the snake-cased name inside; a Ruby method keeps its namespace.
    ("h3-0292", "symbol", ["allow_failure"]),
    ("h3-0054", "symbol", ["RSpec::Expectations#fail_with", "fail_with", "approved_text", "received_text"]),
    ("h4-0170", "symbol", ["Api::ErrorsController#from_ember"]),
    # A Go function by its import path (a panic's frame, "created by"), a symbol and not a URL.
    ("z035", "symbol", ["code.google.com/p/rog-go/parallel.(*Run).Do"]),
    ("h2-0318", "symbol", ["github.com/Southclaws/sampctl/runtime.run.func5"]),
    ("h4-0214", "symbol", ["github.com/spf13/cobra.(*Command).ExecuteC"]),
    ("h4-0214", "url", []),
    # A missing member named by its runtime or compiler (and the TypeScript type unless a primitive).
    ("h3-0260", "symbol", ["name"]),
    ("h4-0015", "symbol", ["spam"]),
    ("h4-0308", "symbol", ["toJS"]),
    ("h4-0384", "symbol", ["onAppSettingsClicked", "TopBarComponent"]),
    ("h3-0079", "symbol", ["map"]),
    ("h4-0349", "symbol", ["properties"]),
    # A logger's abbreviated class name (outside a log line's brackets).
    ("z045", "symbol", ["o.s.b.f.s.DefaultListableBeanFactory",
                        "org.springframework.context.annotation.internalAutowiredAnnotationProcessor"]),
    ("h3-0074", "symbol", ["o.s.d.r.c.RepositoryConfigurationDelegate"]),
    ("h3-0089", "symbol", ["o.s.b.d.LoggingFailureAnalysisReporter"]),
    ("x031", "symbol", []),
    # Python's environment accessors are code (heldout4 decision 7); `process.env.X` stays an env var alone.
    ("h3-0031", "symbol", ["os.environ.get"]),
    ("h4-0146", "symbol", ["os.getenv"]),
    # A name said to be installed.
    ("h3-0092", "package", ["jemalloc"]),
    ("h4-0364", "package", ["mxnet"]),
    # ld's exit wording: "ld returned 1 exit status".
    ("h2-0032", "error", ["1 exit status"]),
    ("h3-0036", "error", ["1 exit status"]),
    # A dependency named as one: "add X dependency", "the dependency on X", a commit's deps scope.
    ("h3-0322", "package", ["conventional-changelog-conventionalcommits"]),
    ("h4-0218", "package", ["node-gyp"]),
    ("h4-0256", "package", ["rubocop-sorbet"]),
    # A quoted command its sentence names as one (run/type/use … "x y", "x y" command), whatever the tool.
    ("h2-0303", "command", ["make help"]),
    ("h2-0389", "command", ["gdb ./bylabel core"]),
    ("h3-0329", "command", ["inv docker-new-env", "inv docker-catchup"]),
    ("h4-0005", "command", ["magnet build"]),
    ("h4-0410", "command", ["maven package"]),
    ("h4-0300", "command", ["./target/release/tflgtfs fetch-lines --format gtfs"]),
]

# A command line behind the prompts and echoes terminals and CI print, started by a path to
# its program; a short flag's value is no verb ending a sentence (`-d postgres`, `-D warnings`).
FINDS += [
    ("z017", "command", ["/home/runner/.cargo/bin/cargo clippy -- -D warnings"]),
    ("z282", "command", ["psql -h localhost -p 5432 -U postgres -d postgres"]),
    ("z048", "command", [("D:\\Environment\\jdk\\bin\\java.exe -XX:TieredStopAtLevel=1 -noverify "
                         "-Dspring.output.ansi.enabled=always")]),
    ("z062", "command", ["C:\\flutter\\bin\\flutter.bat doctor --verbose"]),
    ("z089", "command", ["gem uninstall rack"]),  # 22:45 ~/src/sites/clientend (master)$
    ("z134", "command", ["mix live_filter.install.assets"]),  # zsh: user@host dir %
    ("z265", "command", ["kubectl version --short"]),  # a root prompt: '# '
    ("z274", "command", [("helm upgrade --install ingress-nginx ingress-nginx --repo "
                         "https://kubernetes.github.io/ingress-nginx --namespace ingress-nginx "
                         "--create-namespace --set controller.admissionWebhooks.enabled=false")]),
    ("z254", "command", ["docker-compose -f test-docker-compose.yaml down"]),  # GitHub's 'Run '
    ("z140", "command", ["iex -S mix phx.server"]),
    ("z270", "command", [("curl https://raw.githubusercontent.com/kubernetes/ingress-nginx/master/"
                         "deploy/namespace.yaml")]),  # the continuation backslash is no argument
    # A lone absolute path to a file is a file, not a command.
    ("z159", "command", []),
    ("z354", "command", []),
]

# An install argument ends before a sentence's '?' and keeps gem's and Composer's name:version;
# a package manager's listing line (name and version) and Cargo's package id name packages.
FINDS += [
    ("z076", "package", ["bundler"]),  # `gem install bundler`?
    ("z086", "package", ["bundler:2.0.0.pre.3"]),
    ("z173", "package", ["efficiently/authority-controller:1.2.*"]),
    ("z122", "package", ["postgrex"]),
    ("z230", "package", ["kombu"]),
    ("z014", "package", ["monolith"]),
    ("z233", "package", ["Django", "django-celery-with-redis"]),  # I have installed Django 1.6
]

# Commands in prose: any known program that is no English word, with a flag, a path-like word or
# a common verb after it; a subcommand group's own subcommand (docker compose up); a determiner
# before the program does not make it prose when a flag follows (your rustc --version).
FINDS += [
    ("z184", "command", ["composer install"]),
    ("z173", "command", ["composer require efficiently/authority-controller:1.2.*"]),
    ("z131", "command", ["mix phx.gen.live"]),
    ("z132", "command", ["mix phx.new"]),
    ("z293", "command", ["docker compose up"]),
    ("z009", "command", ["rustc --version"]),
    ("z196", "command", ["vite build"]),
    ("x048", "command", ["php composer.phar install --no-interaction --no-dev"]),
    ("z075", "command", []),  # Bundler's `rails (= 4.0.0)` is a requirement, not a command
    ("x272", "command", ["mix deps.compile fun_with_flags", "mix deps.update fun_with_flags",
                         "mix deps.clean fun_with_flags"]),  # a quoted command ends at its quote
]

# A name quoted after the word that says what it is (PHP's Class 'App' not found, a compiler's
# `variable "opts" is unused`); rustc's codes in its summary and after --explain; a tool's
# exclamation (`rake aborted!`) is its output, not a command.
FINDS += [
    ("z166", "symbol", ["App"]),
    ("z178", "symbol", ["Route"]),
    ("z123", "symbol", ["opts"]),
    ("z005", "error", ["E0503", "E0505"]),
    ("z013", "error", ["E0502"]),
    ("z100", "command", []),
    # A backticked unknown tool with a common verb is a command (and the tool no package).
    ("z222", "command", ["pipenv install"]),
    ("z222", "package", []),
]

# A prompt's working directory is a path; an access log's status after the quoted request is an
# HTTP error; a Windows path may cross `Program Files`.
FINDS += [
    ("x110", "file", ["/opt"]),
    ("x191", "file", ["~/src/elixir/phoenix/hi_phx"]),
    ("z215", "file", ["/paddle/go/alist-web-main"]),
    ("x142", "error", ["503"]),
    ("z331", "commit", ["823b44c"]),
    ("z153", "file", ["C:\\Program Files\\dotnet\\sdk\\NuGetFallbackFolder"]),
]

# (dev line, kind, a surface no mention of that kind may start with)
REFUSES = [
    # a name and its version in backticks after "Using" is no command
    ("z138", "command", "phoenix 1.4.15"),
    # make's failed target is a target, not code; one emphasised word is prose.
    ("h2-0286", "symbol", "newflasher.x64"),
    ("h3-0022", "symbol", "videofile_demo"),
    ("h4-0342", "symbol", "myCom"),
    ("h3-0191", "symbol", "_might_"),
    ("h4-0144", "symbol", "_think_"),
    # Dates and IPs are never files or urls.
    ("x142", "file", "22/Mar/2023"),
    ("x142", "url", "192.168.219.252"),
    ("x253", "url", "127.0.0.1"),
    # Products, vendors, containers, log fields, tags and markup are not symbols.
    ("x142", "symbol", "AppleWebKit"),
    ("x162", "symbol", "UptimeRobot"),
    ("x179", "symbol", "uWSGI"),
    ("x029", "symbol", "c.c.a.d.ParamGenericValidationWorker"),
    ("x240", "symbol", "api_1"),
    ("x144", "symbol", "postgresql_database"),
    ("x144", "symbol", "en_US.utf8"),
    ("x090", "symbol", "tool_use_error"),
    ("x152", "symbol", "_This"),
    ("x028", "symbol", "_update"),
    ("x028", "symbol", "block_"),
    ("x035", "symbol", "async"),
    ("x020", "symbol", "v"),
    ("x113", "symbol", "tar"),
    ("x113", "file", ".tar.gz"),
    # A task run by a task runner is not a symbol.
    ("x191", "symbol", "ecto.create"),
    # A status value and a config directive are not code names.
    ("x099", "symbol", "SyncFailed"),
    ("x195", "symbol", "uwsgi_pass"),    # Ruby's receiver class, a JVM option, a log line's thread, a changelog scope, a prompt's
    # directory and a task in prose are not code names.
    ("z101", "symbol", "NilClass"),
    ("z048", "symbol", "TieredStopAtLevel"),
    ("z038", "symbol", "restartedMain"),
    ("z309", "symbol", "in_http"),
    ("z310", "symbol", "child_process"),
    ("z120", "symbol", "live_view_black_jack"),
    ("z134", "symbol", "livefilter_test"),
    ("z131", "symbol", "phx.gen.live"),
    # A setting given on a command line is configuration, not code.
    ("z274", "symbol", "controller.admissionWebhooks.enabled"),
    # A CamelCase name with no code cue is a symbol only if the code index knows it: the text
    # alone (no index, as here) does not make a product or a changelog's class name one.
    ("z266", "symbol", "EvenPodsSpread"),
    ("z307", "symbol", "MindSing"),
    ("z320", "symbol", "TableOutputFormatter"),
    ("z039", "symbol", "ApplicationContext"),
    # A product's release named in prose is no pin (a dependency verb makes it one: z233, x047);
    # prose's `dependency pre-bundling` is a noun, not Elixir's `dependency :name`.
    ("z235", "package", "Celery"),
    ("z304", "package", "Vite"),
    ("z302", "package", "Vite"),
    ("z302", "package", "pre-bundling"),
    # An indented config key with its value (a Kubernetes manifest) is configuration.
    ("z277", "symbol", "apiVersion"),
    # A bracketed UPPER_SNAKE word is a tag or a parser's token label, not a constant.
    ("z326", "symbol", "BUG_FIX"),
    ("z182", "symbol", "T_"),
    # A markdown link's target SHA is the commit its text already names.
    ("z331", "commit", "823b44c0099762dbc94b02ec9f7c95b05b72df2d"),
    # A Kubernetes API group (a manifest's apiVersion, kubectl's `kind.group/name created`) is no url.
    ("z277", "url", "networking.k8s.io"),
    ("z269", "url", "clusterrolebinding"),
    # A bare name a command takes as an argument is not code.
    ("x197", "symbol", "generate_html"),
    ("z133", "symbol", "livetest_demo"),
    ("z197", "symbol", "myApp"),
]

# Short quotations of public issues (not in the labelled set): lines that the definition of a
# symbol rules out, each of which main's extractor called a symbol.
REAL = {
    # apache/cloudstack#6632: a product name
    "product": "cloudstack-management.service - CloudStack Management Server",
    # CVEProject/cvelist#7865: a product after its vendor
    "vendor product": "Apache DolphinScheduler",
    # docker/compose#1961, #753: compose container names
    "container": "Attaching to smeservice_web_1",
    "containers": "Creating example_db_1...",
    # redhat-developer/intellij-kubernetes#778, rancher/rancher#6926: Kubernetes event reasons
    "event": "  Warning  FailedScheduling  35s                 default-scheduler  0/1 nodes are available",
    "reason": "type: 'Warning' reason: 'FailedScheduling' no nodes available to schedule pods",
    # EESSI/software-layer#270: an emoji code
    "emoji": ":x: instead of :heavy_multiplication_x:",
    # salesforce/refocus#485: the keys of key=value log output, snake_case and camelCase
    "logfmt": "at=info method=POST request_id=98350622-443a-4a2a dyno=web.1 service=49ms status=200",
    "logfmt camel": "info: activity=api dbTime=0ms ipAddress=204.14.239.107 method=POST recordCount=1",
}


# Short quotations of public issues: the dependency shapes of Bundler, Hex and Composer.
REAL_PACKAGES = [
    ('Bundler could not find compatible versions for gem "rails":', ["rails"]),  # jejacks0n/mercury#14
    ("Could not find gem 'bundler (~> 1.16)' in any of the relevant sources:", ["bundler"]),  # minicomp/ed#12
    ('{:phoenix_haml, "~> 0.0.5"}', ["phoenix_haml"]),  # chrismccord/phoenix_haml#12
    ("* postgrex (Hex package)", ["postgrex"]),  # phoenixframework/phoenix#1018
    ('Failed to use "httpoison" (version 0.9.0) because', ["httpoison"]),  # hexpm/hex#274
    ("  - Upgrading laravel/framework (v12.1.1 => v12.2.0)", ["laravel/framework"]),  # kawax/composer-update-action#1077
]


@pytest.mark.parametrize(("text", "packages"), REAL_PACKAGES)
def test_dependency_shapes_of_other_ecosystems(text: str, packages: list[str]) -> None:
    assert [m.text for m in extract(text, concepts=False) if m.kind == "package"] == packages


@pytest.mark.parametrize("case", REAL)
def test_names_that_are_not_code_are_not_symbols(case: str) -> None:
    assert [m.text for m in extract(REAL[case], concepts=False) if m.kind == "symbol"] == []


def test_code_keeps_its_keyword_arguments_and_index_names() -> None:
    """The log-field and container rules leave code alone: kwargs in a call, a Mongo index."""
    assert found_in("retry(max_tries=3, back_off=2)") == ["retry", "max_tries", "back_off"]
    assert found_in("E11000 duplicate key error collection: test.users index: email_1") == [
        "test.users", "email_1"]


def found_in(text: str) -> list[str]:
    return [m.text for m in extract(text, concepts=False) if m.kind == "symbol"]


# Round 5, on lines of dev3: files, frames, env accessors, program names, and packages and
# symbols in the shapes below.
FINDS += [
    # a flag's value and a redirect's target are files
    ("h2-0266", "file", ["requirements_windows.txt"]),
    ("h2-0392", "file", ["./parda.x", "normal_137979.trace", "seq.hist"]),
    # a Windows path without its drive
    ("h2-0484", "file", ["\\app\\Http\\Controllers\\SetupController.php"]),
    # Ruby's block frames name the method, never "block"
    ("h2-0079", "symbol", ["execute"]),
    ("h2-0157", "symbol", ["invoke_with_call_chain"]),
    ("h2-0293", "symbol", []),
    # Elixir's System.get_env reads an environment variable
    ("h2-0263", "envvar", ["WARNING_AS_ERRORS"]),
    # a frame's parameter names are no symbols
    ("h2-0048", "symbol", ["Microsoft.AspNetCore.Builder.RouterMiddleware.Invoke"]),
    ("h2-0110", "symbol", ["System.Diagnostics.Process.StartCore"]),
    # a backticked program is no code name
    ("h2-0504", "symbol", []),
    # backticked names in a sentence about dependencies are packages
    ("h2-0114", "package", ["packaging", "argon2"]),
    ("h2-0047", "package", ["sha3", "weak"]),
    ("h2-0045", "package", ["check-2.2.2"]),  # pytest's plugins line
    ("h2-0357", "package", ["pytest-7.4.3", "pluggy-1.2.0"]),  # pytest's platform line
    ("h2-0108", "package", ["node-sass"]),  # `npm i`
    ("h2-0172", "package", ["yarn"]),  # choco
    ("h2-0237", "package", ["solace-pubsubplus"]),  # `uv add`
    ("h2-0363", "package", ["prettier", "create-react-app"]),  # `yarn global add`
    ("h2-0331", "package", ["redacted-visualization-plugin", "dash-cytoscape"]),  # a resolver's "Because X depends on"
    ("h2-0449", "package", ["flask"]),  # Python 2's unquoted "No module named flask"
    ("h2-0483", "package", ["doctrine/doctrine-bundle", "jdorn/sql-formatter"]),  # Composer's "- a/b … requires c/d"
    ("h2-0535", "package", ["wabt-sys"]),  # cargo's "Could not compile `X`"
    ("h2-0068", "symbol", ["Xetaio\\Mentions\\Parser\\MentionParser::parse()"]),  # a PHP static call keeps its ()
    ("h2-0350", "symbol", ["App\\Twig::escapeTex()"]),
    ("h2-0100", "symbol", ["SitesController->index()"]),  # PHP's arrow call
    ("h2-0072", "symbol", ["main"]),  # Kotlin's unresolved reference; a Gradle task path is no symbol
    ("h2-0087", "symbol", []),  # capitals run together at a full stop
    ("h2-0116", "symbol", []),  # `mix do deps.get`: a task name
    ("h2-0156", "symbol", []),  # a zsh prompt's host
    ("h2-0239", "symbol", []),  # a folder named as one
]


# Round 6: shapes that more than one of dev, dev2, dev3 and dev4 show (each rule's lines from two sets
# or more), kept only if they also help the set left out (leave-one-set-out, bench/data/extraction-fresh).
FINDS += [
    # a default keeps its place in the env var's surface: `${X:-default}` (dev3, dev4)
    ("h2-0282", "envvar", ["${DB_PASSWORD}", "${DB_PASSWORD:-password}"]),
    ("h3-0237", "envvar", ["${PORT_FRONTEND:-3000}"]),
    ("h3-0237", "symbol", []),
    # the names an update verb moves "to <version>", each of a list (dev2, dev3, dev4)
    ("z330", "package", ["ratatui", "rui-tree-widget"]),
    ("h2-0098", "package", ["quick-error"]),
    ("h2-0163", "package", ["indicam-client"]),
    ("h2-0538", "package", ["actions/setup-node"]),
    ("h3-0072", "package", ["conventional-changelog", "conventional-recommended-bump"]),
    # a backticked UPPER_SNAKE name of three parts or more is a variable's (dev3, dev4; all such names
    # of the four sets are; tests/data's `NEW_CHECKOUT` feature flag, two parts, stays a constant)
    ("h2-0046", "envvar", ["SYSTEM_FAILURE_EXIT_CODE"]),
    ("h2-0197", "envvar", ["BUILD_FAILURE_EXIT_CODE"]),
    ("h3-0254", "envvar", ["DATABASE_URL_APP", "DATABASE_URL_ADMIN", "DATABASE_URL"]),
    ("h3-0254", "symbol", []),
    # a quoted name said to be a dependency (dev3, dev4)
    ("h2-0129", "package", ["chalk"]),
    ("h3-0136", "package", ["Kanna"]),
    # the package-shaped names prose installs, one or a list (dev3, dev4)
    ("h2-0410", "package", ["flask"]),
    ("h3-0295", "package", ["detectron2", "pointnet2", "sphericalmap_utils"]),
    ("h3-0295", "symbol", []),
    ("h3-0121", "package", ["cjs-loader", "express", "express-http-proxy"]),
    ("z274", "package", []),  # helm's `--install` is a flag
    # a Gradle task or configuration path is no symbol, quoted too (dev3's `Task :buildSrc:compileKotlin`)
    ("h2-0072", "symbol", ["main"]),
    ("h3-0118", "symbol", ["filteredArgumentsMap"]),
    ("h3-0210", "symbol", []),
    # a resolver's "X depends on", Bundler's conflict tree included (dev2's and dev3's resolver lines)
    ("h2-0331", "package", ["redacted-visualization-plugin", "dash-cytoscape"]),
    ("h3-0192", "package", ["mercury-rails"]),
    # a build, test or environment tool named in prose is the program, no dependency (all four sets)
    ("x091", "package", ["date-fns"]),
    ("z102", "package", []),
    ("z302", "package", []),
    ("h2-0422", "package", []),
    ("h3-0114", "package", []),
    ("h3-0216", "package", []),
]


@pytest.mark.parametrize(("line", "kind", "surfaces"), FINDS)
def test_rule_finds(line: str, kind: str, surfaces: list[str]) -> None:
    assert found(line, kind) == surfaces, LINES[line]


@pytest.mark.parametrize(("line", "kind", "surface"), REFUSES)
def test_rule_refuses(line: str, kind: str, surface: str) -> None:
    assert not [f for f in found(line, kind) if f.startswith(surface)], LINES[line]


def test_a_name_without_a_code_cue_is_given_only_to_a_caller_that_asks_the_index() -> None:
    """Linking asks for bare names (the index decides: tests/extract/test_link.py); a cue such as
    pydantic's 'validation errors for Model' makes the name code without any index."""
    [bare] = [m for m in extract(LINES["z320"], concepts=False, bare=True) if m.kind == "symbol"]
    assert (bare.text, bare.bare) == ("TableOutputFormatter", True)
    assert found("x165", "symbol") == ["UserTranscriptEntry"]


def test_a_call_may_start_with_an_elixir_atom() -> None:
    assert "StormbreakerWeb.Application.start" in found("z136", "symbol")  # start(:normal, [])


def test_a_line_is_a_command_but_a_version_line_is_not() -> None:
    assert found("x221", "command") == ["sleep 2"]
    assert found("x190", "command") == []  # cargo 1.32.0 (8610973aa 2019-01-02)


def test_location_stays_on_the_mention() -> None:
    [f] = [m for m in extract(LINES["x070"]) if m.kind == "file"]
    assert (f.text, f.norm, f.detail) == ("test/test_combined_transcript_link.py",
                                          "test/test_combined_transcript_link.py", "59")


def test_a_conventional_commit_type_is_no_call() -> None:
    # entire-cli f022dad1 (a dev session's transcript), verbatim; a real call keeps its symbol
    text = "which commit? `6d61daaa` — `feat(manual-commit): detect mid-turn commits`"
    assert [(m.kind, m.text) for m in extract(text, concepts=False)] == [("commit", "6d61daaa")]
    assert [m.text for m in extract("call fix(x) to repair it", concepts=False)] == ["fix"]


def test_a_jvm_frame_keeps_its_nested_class_and_names_no_env_var() -> None:
    # the JDK's worker frame, as every Java thread-pool trace prints it
    text = "\tat java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:624)"
    got = [(m.kind, m.text) for m in extract(text, concepts=False)]
    assert got == [("symbol", "java.util.concurrent.ThreadPoolExecutor$Worker.run"),
                   ("file", "ThreadPoolExecutor.java")], got
    assert [m.text for m in extract("export PATH=/usr/bin:$PATH", concepts=False)
            if m.kind == "envvar"] == ["PATH", "$PATH"]


def test_php_this_is_no_env_var() -> None:
    assert [(m.kind, m.text) for m in extract("$this->foo()", concepts=False)] == [("symbol", "foo()")]
