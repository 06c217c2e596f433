"""Developer vocabulary: programs and their subcommands, installers and the files of build ecosystems.

Written from what each ecosystem ships and documents, not from any labelled line: a program
heading a command line, the verbs that make an installer take package names, and the file names
that are files rather than code. ``text`` adds these tables to its own (git, npm, pip, cargo, docker,
gem, composer, mvn … are there) once at import.
"""

from __future__ import annotations


def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


# A program with subcommands: its name then a subcommand makes a command even in prose.
PROGRAMS: dict[str, frozenset[str]] = {
    # package managers and resolvers
    "cabal": _words("""install build run test repl update configure freeze init sdist upload check list info
        exec haddock clean gen-bounds outdated v1-install v2-install new-install v1-build v2-build new-build
        v2-run v2-test v2-repl v2-configure new-run new-test"""),
    "stack": _words("build install test run exec ghci repl setup new init update upgrade clean path ls"),
    "ghcup": _words("install set list upgrade rm tui"),
    "opam": _words("""install remove uninstall update upgrade init switch pin env list show search config
        repository repo exec source reinstall info"""),
    "dune": _words("build exec test runtest clean init install uninstall utop fmt promote describe"),
    "esy": _words("install build add x"),
    "nimble": _words("install uninstall build run test init publish refresh search list path develop c cc js"),
    "nim": _words("c cc cpp compile js e r doc check"),
    "zig": _words("build build-exe build-lib build-obj run test init init-exe init-lib fmt fetch version cc c++ "
                  "translate-c env targets"),
    "pub": _words("get upgrade add remove outdated deps downgrade publish run global cache"),
    "dart": _words("pub run compile create analyze format test fix doc info"),
    "flutter": _words("""pub run build create doctor clean test analyze upgrade channel config devices
        install attach drive emulators gen-l10n logs packages precache screenshot"""),
    "luarocks": _words("install remove build make pack list search show config path upload download init test"),
    "rebar3": _words("compile eunit ct shell release deps upgrade new dialyzer xref as tar"),
    "gleam": _words("build run test add remove new format deps export"),
    "julia": frozenset(),
    "Rscript": frozenset(),
    "R": _words("CMD"),
    "cpanm": frozenset(),
    "cpan": _words("install"),
    "vcpkg": _words("install remove list search update upgrade integrate export new"),
    "conan": _words("install create build export new search remove upload profile config"),
    "deno": _words("run test fmt lint compile bundle cache info install uninstall task add remove check doc "
                   "repl upgrade serve jupyter publish"),
    "bun": _words("install add remove run test build x create upgrade init link pm update outdated"),
    "npx": _words("""prisma tsc eslint prettier jest vitest playwright next vite create-react-app
        ts-node tsx nx turbo"""),
    "pnpm": _words("""install i add remove rm run test start build exec dlx update up outdated audit
        publish store why list ls create"""),
    "mamba": _words("install create activate env list remove update run search repoquery"),
    "micromamba": _words("install create activate env list remove update run"),
    "conda": _words("install create activate env list remove update run search config info skeleton build "
                    "init clean deactivate"),
    "pixi": _words("add install run shell init remove task global"),
    "rye": _words("add sync run init pin install tools"),
    "hatch": _words("run build env new publish shell test version"),
    "pipenv": _words("install uninstall lock sync run shell graph update clean"),
    "nuget": _words("install restore pack push update add locals sources"),
    "sbt": _words("compile test run package publish publishLocal update clean console assembly reload "
                  "dependencyTree testOnly"),
    "lein": _words("run test repl deps uberjar new compile"),
    "clj": frozenset(),
    "coursier": _words("install fetch launch setup"),
    "cs": _words("install fetch launch setup"),
    "spack": _words("install load find spec uninstall env"),
    "nix": _words("build run develop shell flake profile eval search store"),
    "nix-env": frozenset(),
    "nix-shell": frozenset(),
    "guix": _words("install package pull build shell"),
    "brew": _words("install uninstall upgrade update list info services tap reinstall link unlink doctor "
                   "cleanup search"),
    "port": _words("install uninstall upgrade selfupdate"),
    "apt": _words("install remove update upgrade search show purge autoremove list"),
    "apt-get": _words("install remove update upgrade purge autoremove"),
    "dnf": _words("install remove update upgrade search info"),
    "yum": _words("install remove update upgrade search info"),
    "zypper": _words("install in remove rm refresh update"),
    "apk": _words("add del update upgrade"),
    "pacman": frozenset(),
    "yay": frozenset(),
    "snap": _words("install remove refresh list"),
    "flatpak": _words("install uninstall update run"),
    "choco": _words("install uninstall upgrade list search"),
    "winget": _words("install uninstall upgrade list search show"),
    "scoop": _words("install uninstall update bucket search"),
    "asdf": _words("install plugin global local list"),
    "mise": _words("install use run exec"),
    "rustup": _words("update install default toolchain target component show override run"),
    "volta": _words("install pin"),
    "nvm": _words("install use ls alias"),
    "pyenv": _words("install global local versions"),
    "sdk": _words("install use list"),
    # build tools and compilers
    "cmake": frozenset(),
    "ctest": frozenset(),
    "ninja": frozenset(),
    "meson": _words("setup compile test install configure"),
    "bazel": _words("build test run query clean"),
    "make": _words("""test tests install build lint check clean all dev docs doc format fmt release demo
        bench run serve deploy setup bootstrap ci coverage typecheck e2e migrate up down"""),
    "msbuild": frozenset(),
    "gcc": frozenset(),
    "g++": frozenset(),
    "clang": frozenset(),
    "clang++": frozenset(),
    "cl": frozenset(),
    "ld": frozenset(),
    "ghc": frozenset(),
    "ghci": frozenset(),
    "ocaml": frozenset(),
    "ocamlfind": _words("install remove list query ocamlc ocamlopt"),
    "scalac": frozenset(),
    "kotlinc": frozenset(),
    "swiftc": frozenset(),
    "xcrun": frozenset(),
    "xcode-select": frozenset(),
    "pod": _words("install update repo init outdated deintegrate"),
    "elm": _words("install make init reactor repl"),
    "lua": frozenset(),
    "luajit": frozenset(),
    # infrastructure
    "helm": _words("install upgrade uninstall list repo template lint package rollback status dependency "
                   "pull push show search history get create test version plugin"),
    "terraform": _words("init plan apply destroy validate fmt output import state workspace providers "
                        "refresh show taint untaint graph console login version"),
    "tofu": _words("init plan apply destroy validate fmt output import state"),
    "terragrunt": _words("init plan apply destroy run-all"),
    "ansible": frozenset(),
    "ansible-playbook": frozenset(),
    "ansible-galaxy": _words("install collection role init list"),
    "ansible-vault": _words("encrypt decrypt edit view create rekey"),
    "salt": frozenset(),
    "salt-call": frozenset(),
    "vagrant": _words("up halt destroy ssh provision reload status box init"),
    "packer": _words("build init validate fmt"),
    "pulumi": _words("up preview destroy stack new login config"),
    "kubectl": _words("""get describe apply delete logs exec port-forward rollout scale create edit patch
        config top cp label annotate expose run set wait drain cordon"""),
    "minikube": _words("start stop delete status dashboard service"),
    "kind": _words("create delete load"),
    "k3d": _words("cluster"),
    "eksctl": _words("create delete get utils"),
    "az": _words("login account group vm aks acr webapp storage functionapp ad"),
    "gcloud": _words("auth config compute container run functions app builds"),
    "aws": _words("s3 ec2 ecr ecs lambda iam sts logs cloudformation configure"),
    "podman": _words("build run exec ps logs pull push images rm rmi stop start inspect"),
    "docker-compose": _words("up down build run exec logs ps pull restart stop start config"),
    "heroku": _words("login create logs run config ps apps"),
    "firebase": _words("deploy init login serve emulators"),
    "vercel": _words("deploy dev login env"),
    "netlify": _words("deploy dev login build"),
    "wrangler": _words("dev deploy publish login init"),
    # version control and hosting
    "hg": _words("clone pull push commit update log status diff"),
    "svn": _words("checkout co update up commit ci status log diff"),
    "gh": _words("pr issue repo run workflow release auth api"),
    "glab": _words("mr issue repo ci auth"),
    # databases and services
    "psql": frozenset(),
    "mysql": frozenset(),
    "mysqld": frozenset(),
    "mongosh": frozenset(),
    "mongod": frozenset(),
    "redis-server": frozenset(),
    "pg_dump": frozenset(),
    "pg_ctl": frozenset(),
    "createdb": frozenset(),
    "sqlcmd": frozenset(),
    # shells
    "powershell": frozenset(),
    "pwsh": frozenset(),
    "cmd": frozenset(),
    "eval": frozenset(),
}

# A subcommand's own subcommands: `helm repo update`, `flutter pub get`.
SUBGROUPS: dict[str, frozenset[str]] = {
    "flutter pub": _words("get upgrade add remove outdated deps downgrade run"),
    "dart pub": _words("get upgrade add remove outdated deps downgrade publish run global cache"),
    "helm repo": _words("add update list remove index"),
    "helm dependency": _words("update build list"),
    "opam switch": _words("create list remove set show"),
    "ansible-galaxy collection": _words("install list build publish"),
    "ansible-galaxy role": _words("install list init remove"),
}

# Words after an install verb that are no package: "dnf install instead of apt install".
NOT_ARGUMENTS = _words("instead too either anyway manually globally locally now here there again failed fails "
                       "failing succeeded works worked")

# Programs that are English words as well: they make a command only with a subcommand or an argument shape.
ENGLISH_PROGRAMS = _words("pub port kind salt sdk cs cl ld R eval cmd stack nix pod snap spack esy elm")

# PowerShell's approved verbs (Get-Verb): `Verb-Noun` is a cmdlet.
CMDLET_VERBS = _words(
    """Add Approve Assert Backup Block Build Checkpoint Clear Close Compare Complete Compress Confirm Connect
    Convert ConvertFrom ConvertTo Copy Debug Deny Deploy Disable Disconnect Dismount Edit Enable Enter Exit
    Expand Export Find Format Get Grant Group Hide Import Initialize Install Invoke Join Limit Lock Measure
    Merge Mount Move New Open Optimize Out Ping Pop Protect Publish Push Read Receive Redo Register Remove
    Rename Repair Request Reset Resize Resolve Restart Restore Resume Revoke Save Search Select Send Set Show
    Skip Split Start Step Stop Submit Suspend Switch Sync Test Trace Unblock Undo Uninstall Unlock Unprotect
    Unpublish Unregister Update Use Wait Watch Write"""
)
# Cmdlets whose argument is a module or package.
CMDLET_INSTALLS = _words("Import-Module Install-Module Install-Package Update-Module Uninstall-Module Find-Module")

# An installer (or a program and subcommand) and the verbs after which it takes package names.
INSTALLERS: dict[str, str] = {
    "cabal": "install v1-install v2-install new-install",
    "stack": "install",
    "opam": "install reinstall remove uninstall upgrade",
    "opam pin": "add",
    "nimble": "install uninstall",
    "pub": "add remove",
    "dart pub": "add remove",
    "flutter pub": "add remove",
    "luarocks": "install remove",
    "cpan": "install",
    "vcpkg": "install remove",
    "conan": "install",
    "zypper": "install in",
    "port": "install",
    "snap": "install",
    "flatpak": "install",
    "spack": "install",
    "guix": "install",
    "ansible-galaxy": "install",
    "ansible-galaxy collection": "install",
    "deno": "add install",
    "gleam": "add",
    "elm": "install",
    "rye": "add",
    "pixi": "add",
    "micromamba": "install",
    "pipenv": "install",
    "hatch": "",
    "ghcup": "install",
    "rebar3": "",
    "raco pkg": "install",
    "coursier": "install",
    "cs": "install",
    "asdf plugin": "add",
    "volta": "install",
    "dotnet tool": "install",
    "pod": "install",
}

# Extensions of source, project and build files of the ecosystems above.
FILE_EXTS = _words(
    """zig zon nim nims nimble cabal hsc lhs mli mll mly opam sbt sc fsx fsi fsproj vbproj csproj vcxproj
    vcproj sln props targets filters lib exe obj pdb ilk exp def idl rc psm1 psd1 ps1xml xaml cshtml razor
    resx rockspec rkt scm lisp purs idr agda lean rmd Rmd qmd Rproj rds rda tfstate bzl bazel ninja gn gni
    meson jsonnet libsonnet dhall rego cue pbxproj xcconfig xcworkspace xcodeproj xib storyboard
    entitlements xcscheme podspec gemspec nuspec nupkg apk aab aar ipa deb rpm msi dmg cu cuh f90 f95 cl
    glsl hlsl wgsl metal asm s S ld pyd pxi tex bib el vim mlir ll bc"""
)
# Extensions that are words or code too often to stand alone as a file name without a slash.
AMBIGUOUS_EXTS = _words("sc cl s S el def exp obj rc ld bc ll exe")

# Manifests and build files with no extension, or whose name is the point.
FILE_NAMES = _words(
    """dune-project dune-workspace SConstruct SConscript Kconfig Kbuild Cartfile
    Puppetfile Dangerfile Appfile Matchfile Taskfile"""
)

# Keywords that read like calls (`function(err)`, `fn() type`, `__declspec(dllimport)`, `sizeof(int)`): as a call,
# the language's own word, never a name in the code.
CALL_KEYWORDS = _words("function fn __declspec __attribute__ __asm__ sizeof alignof typeof decltype static_assert")
# C's built-in type names (`'size_t' to 'int'`), as any language's built-in types are none.
C_TYPES = _words(
    """size_t ssize_t ptrdiff_t intptr_t uintptr_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t
    uint64_t wchar_t char16_t char32_t off_t time_t pid_t"""
)
