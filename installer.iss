; Inno Setup script for the Windows installer of Magi Desktop.
; It packages the PyInstaller output folder dist\magi (the spec that produces
; it arrives with the desktop-app issue; until then this script cannot build).

#define AppName "Magi Desktop"
#define AppVersion "0.1.0"

[Setup]
AppId={{7B6E4B0A-2F4E-4C55-9D7E-6F1C2A9B3E10}
AppName={#AppName}
AppVersion={#AppVersion}
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
OutputBaseFilename=MagiDesktop-{#AppVersion}-setup
Compression=lzma2
SolidCompression=yes
PrivilegesRequired=lowest
ArchitecturesInstallIn64BitMode=x64compatible

[Files]
Source: "dist\magi\*"; DestDir: "{app}"; Flags: recursesubdirs createallsubdirs ignoreversion

[Icons]
Name: "{group}\{#AppName}"; Filename: "{app}\magi.exe"
Name: "{userstartup}\{#AppName}"; Filename: "{app}\magi.exe"; Tasks: autostart

[Tasks]
Name: "autostart"; Description: "Start {#AppName} when I sign in"; Flags: unchecked

[Run]
Filename: "{app}\magi.exe"; Description: "Start {#AppName}"; Flags: nowait postinstall skipifsilent
