<?php
/**
 * PHP SoapClient (ext/soap) client for the compatibility suite: SOAP_1_1 and SOAP_1_2.
 * Usage: php clients/php/client.php <fixture.json>
 * Prints `RESULT php <soap11|soap12> <check> PASS|FAIL <detail>` per check (see scripts/test-clients.mjs).
 */
declare(strict_types=1);

const CLIENT = 'php';
const CHECK_NAMES = ['wsdl', 'login-ok', 'login-bad', 'token-ok', 'token-bad', 'whatsnew', 'login-url', 'json-user', 'json-token', 'fault'];

$fx = json_decode(file_get_contents($argv[1]), true, 512, JSON_THROW_ON_ERROR);

function report(string $protocol, string $check, bool $ok, string $detail = ''): void
{
    $text = preg_replace('/^(.{0,300}).*$/us', '$1', trim(preg_replace('/\s+/u', ' ', $detail) ?? '')) ?? '';
    echo 'RESULT ' . CLIENT . " $protocol $check " . ($ok ? 'PASS' : 'FAIL') . " $text\n";
}

function runCheck(string $protocol, string $name, callable $fn): void
{
    try {
        [$ok, $detail] = $fn();
        report($protocol, $name, $ok, $detail);
    } catch (Throwable $e) {
        report($protocol, $name, false, get_class($e) . ': ' . $e->getMessage());
    }
}

/**
 * SoapClient that can make the outgoing WhatsNew carry an AppID that is not an int: ext/soap
 * converts our value to int itself, so a request the service rejects is changed on its way out.
 * The reply goes through SoapClient's normal fault handling.
 */
final class TestSoapClient extends SoapClient
{
    public bool $badAppId = false;

    public function __doRequest(string $request, string $location, string $action, int $version, bool $oneWay = false): ?string
    {
        if ($this->badAppId) {
            $request = preg_replace('#<(\w+:)?AppID>[^<]*</(\w+:)?AppID>#', '<$1AppID>abc</$2AppID>', $request);
        }
        return parent::__doRequest($request, $location, $action, $version, $oneWay);
    }
}

/**
 * ext/soap returns the DataTable's <s:any> content as an XML string (xs:schema + diffgram).
 * Read it as a DataTable reader would: columns and types from the schema, rows from the diffgram.
 */
function readDataTable(string $any): array
{
    $doc = new DOMDocument();
    if (!$doc->loadXML('<any>' . $any . '</any>')) {
        throw new RuntimeException('WhatsNewResult is not XML');
    }
    $xp = new DOMXPath($doc);
    $xp->registerNamespace('xs', 'http://www.w3.org/2001/XMLSchema');
    $xp->registerNamespace('diffgr', 'urn:schemas-microsoft-com:xml-diffgram-v1');
    $xp->registerNamespace('msdata', 'urn:schemas-microsoft-com:xml-msdata');
    $tableName = $xp->evaluate('string(/any/xs:schema/xs:element/@msdata:MainDataTable)');
    if ($tableName === '') {
        $tableName = $xp->evaluate('string(/any/xs:schema/xs:element/xs:complexType/xs:choice/xs:element/@name)');
    }
    $columns = [];
    foreach ($xp->query("/any/xs:schema//xs:element[@name='$tableName']/xs:complexType/xs:sequence/xs:element") as $col) {
        $columns[$col->getAttribute('name')] = $col->getAttribute('type');
    }
    $rows = [];
    foreach ($xp->query("/any/diffgr:diffgram/*/*[local-name()='$tableName']") as $rowNode) {
        $row = [];
        foreach ($columns as $name => $type) {
            $cell = $xp->query($name, $rowNode)->item(0);
            if ($cell === null) {
                $row[$name] = null;
                continue;
            }
            $text = $cell->textContent;
            $row[$name] = match ($type) {
                'xs:int' => (int) $text,
                'xs:dateTime' => new DateTimeImmutable($text),
                default => $text,
            };
        }
        $rows[] = $row;
    }
    return [$columns, $rows];
}

function compareNews(array $fx, array $columns, array $rows): array
{
    $expectedColumns = [];
    foreach ($fx['columns'] as [$name, $type]) {
        $expectedColumns[$name] = 'xs:' . $type;
    }
    if ($columns !== $expectedColumns) {
        return [false, 'columns ' . json_encode($columns) . ' != ' . json_encode($expectedColumns)];
    }
    if (count($rows) !== count($fx['news'])) {
        return [false, count($rows) . ' rows, expected ' . count($fx['news'])];
    }
    foreach ($fx['news'] as $i => $want) {
        $got = $rows[$i];
        $expected = ['NewsID' => $want['newsId'], 'AppID' => $want['appId'], 'Title' => $want['title'], 'Body' => $want['body'],
            'Language' => $want['language'], 'Url' => $want['url']];
        foreach ($expected as $key => $value) {
            if ($got[$key] !== $value) {
                return [false, "row $i $key " . json_encode($got[$key], JSON_UNESCAPED_UNICODE) . ' != ' . json_encode($value, JSON_UNESCAPED_UNICODE)];
            }
        }
        $wantTime = new DateTimeImmutable($want['publishedAt']);
        $published = $got['PublishedAt'];
        if (!($published instanceof DateTimeImmutable) || $published->format('U.v') !== $wantTime->format('U.v')) {
            return [false, "row $i PublishedAt " . ($published instanceof DateTimeImmutable ? $published->format(DATE_RFC3339_EXTENDED) : json_encode($published)) . " != {$want['publishedAt']}"];
        }
    }
    return [true, count($rows) . ' rows; NewsID=[' . implode(',', array_column($rows, 'NewsID')) . ']; PublishedAt[0]=' . $rows[0]['PublishedAt']->format(DATE_RFC3339_EXTENDED)];
}

function startsWithTicket(string $url, string $loginUrl): bool
{
    return str_starts_with($url, $loginUrl . '&ticket=') || str_starts_with($url, $loginUrl . '?ticket=');
}

function runProtocol(array $fx, string $protocol, int $version): void
{
    $client = null;
    runCheck($protocol, 'wsdl', function () use ($fx, $version, &$client) {
        $client = new TestSoapClient($fx['wsdl'], [
            'soap_version' => $version,
            'cache_wsdl' => WSDL_CACHE_NONE,
            'exceptions' => true,
            'trace' => true,
            'connection_timeout' => 10,
        ]);
        $ops = array_unique(array_map(fn ($f) => preg_replace('/^\S+ (\w+)\(.*$/', '$1', $f), $client->__getFunctions()));
        return [count($ops) === 6, 'operations: ' . implode(',', $ops)];
    });
    if ($client === null) {
        foreach (array_slice(CHECK_NAMES, 1) as $name) {
            report($protocol, $name, false, 'no client (WSDL did not load)');
        }
        return;
    }
    $expectedContentType = $version === SOAP_1_2 ? 'application/soap+xml' : 'text/xml';
    $good = ['login' => $fx['login'], 'password' => $fx['password'], 'AppId' => $fx['appId'], 'IPAddress' => ''];
    $token = null;

    runCheck($protocol, 'login-ok', function () use ($client, $good, &$token, $expectedContentType) {
        $token = $client->ValidateUser($good)->ValidateUserResult ?? null;
        $sent = $client->__getLastRequestHeaders();
        $ok = is_string($token) && strlen($token) >= 16 && str_contains($sent, "Content-Type: $expectedContentType");
        return [$ok, 'token ' . json_encode($token) . " ($expectedContentType)"];
    });
    runCheck($protocol, 'login-bad', function () use ($client, $good, $fx) {
        $r = $client->ValidateUser(['password' => $fx['badPassword']] + $good);
        $v = $r->ValidateUserResult ?? null;
        return [$v === '' || $v === null, 'result ' . json_encode($v)];
    });
    runCheck($protocol, 'token-ok', function () use ($client, &$token) {
        $v = $client->ValidateUserToken(['token' => $token])->ValidateUserTokenResult;
        return [$v === true, 'result ' . json_encode($v)];
    });
    runCheck($protocol, 'token-bad', function () use ($client) {
        $v = $client->ValidateUserToken(['token' => 'not-a-token-0000'])->ValidateUserTokenResult;
        return [$v === false, 'result ' . json_encode($v)];
    });
    runCheck($protocol, 'whatsnew', function () use ($client, $fx) {
        $r = $client->WhatsNew(['AppToken' => '', 'AppID' => $fx['appId'], 'AppVersion' => '', 'Language' => 'en', 'qtyNews' => $fx['qtyNews']]);
        [$columns, $rows] = readDataTable($r->WhatsNewResult->any);
        [$ok, $detail] = compareNews($fx, $columns, $rows);
        if (!$ok) {
            return [$ok, $detail];
        }
        // An empty table (qtyNews = 0): schema, empty diffgram.
        $e = $client->WhatsNew(['AppToken' => '', 'AppID' => $fx['appId'], 'AppVersion' => '', 'Language' => 'en', 'qtyNews' => 0]);
        [$emptyColumns, $emptyRows] = readDataTable($e->WhatsNewResult->any);
        return [count($emptyRows) === 0 && count($emptyColumns) === count($fx['columns']), "$detail; qtyNews=0: " . count($emptyRows) . ' rows, ' . count($emptyColumns) . ' columns'];
    });
    runCheck($protocol, 'login-url', function () use ($client, $fx, &$token) {
        $url = $client->GetUserLoginURL(['token' => $token, 'AppID' => $fx['appId']])->GetUserLoginURLResult ?? null;
        if (!is_string($url) || !startsWithTicket($url, $fx['loginUrl'])) {
            return [false, 'url ' . json_encode($url, JSON_UNESCAPED_SLASHES)];
        }
        parse_str((string) parse_url($url, PHP_URL_QUERY), $query);
        $first = $client->ValidateUserToken(['token' => $query['ticket']])->ValidateUserTokenResult;
        $second = $client->ValidateUserToken(['token' => $query['ticket']])->ValidateUserTokenResult;
        return [$first === true && $second === false, "$url -> first " . json_encode($first) . ', second ' . json_encode($second)];
    });

    // The JSON operations declare no parameters; they read them from the request, here from the
    // query string of the endpoint address (__setLocation).
    $jsonToken = null;
    runCheck($protocol, 'json-user', function () use ($client, $fx, &$jsonToken) {
        $client->__setLocation($fx['endpoint'] . '?' . http_build_query(['login' => $fx['login'], 'password' => $fx['password'], 'AppId' => $fx['appId']]));
        try {
            $text = $client->ValidateUserJSON([])->ValidateUserJSONResult;
        } finally {
            $client->__setLocation($fx['endpoint']);
        }
        $data = json_decode($text, true, 16, JSON_THROW_ON_ERROR);
        $jsonToken = $data['token'] ?? null;
        $valid = $client->ValidateUserToken(['token' => $jsonToken])->ValidateUserTokenResult;
        return [($data['success'] ?? null) === true && $valid === true, "$text; token valid=" . json_encode($valid)];
    });
    runCheck($protocol, 'json-token', function () use ($client, $fx, &$jsonToken, &$token) {
        try {
            $client->__setLocation($fx['endpoint'] . '?' . http_build_query(['token' => $jsonToken ?? $token ?? '']));
            $good = $client->ValidateUserTokenJSON([])->ValidateUserTokenJSONResult;
            $client->__setLocation($fx['endpoint'] . '?token=garbage');
            $bad = $client->ValidateUserTokenJSON([])->ValidateUserTokenJSONResult;
        } finally {
            $client->__setLocation($fx['endpoint']);
        }
        $g = json_decode($good, true, 16, JSON_THROW_ON_ERROR);
        $b = json_decode($bad, true, 16, JSON_THROW_ON_ERROR);
        return [($g['valid'] ?? null) === true && ($b['valid'] ?? null) === false, "$good / $bad"];
    });
    runCheck($protocol, 'fault', function () use ($client, $fx, $version) {
        $client->badAppId = true;
        try {
            $client->WhatsNew(['AppToken' => '', 'AppID' => 1, 'AppVersion' => '', 'Language' => '', 'qtyNews' => 1]);
            return [false, 'no SoapFault'];
        } catch (SoapFault $f) {
            $expectedCode = $version === SOAP_1_2 ? 'Sender' : 'Client';
            $ok = str_contains($f->faultstring, $fx['soapFaultText']) && str_ends_with((string) $f->faultcode, $expectedCode);
            return [$ok, "SoapFault faultcode={$f->faultcode} faultstring={$f->faultstring}"];
        } finally {
            $client->badAppId = false;
        }
    });
}

echo 'VERSION ' . CLIENT . ' PHP ' . PHP_VERSION . ' SoapClient (ext/soap ' . phpversion('soap') . ', libxml ' . LIBXML_DOTTED_VERSION . ")\n";
runProtocol($fx, 'soap11', SOAP_1_1);
runProtocol($fx, 'soap12', SOAP_1_2);
