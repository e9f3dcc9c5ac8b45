#!/usr/bin/python3
"""Python zeep client for the compatibility suite: SOAP 1.1 and SOAP 1.2 ports of our WSDL.

Usage: /usr/bin/python3 clients/python-zeep/client.py <fixture.json>
Prints `RESULT zeep <soap11|soap12> <check> PASS|FAIL <detail>` per check (see scripts/test-clients.mjs).
Needs Debian's python3-zeep (no PyPI).
"""
import datetime
import json
import sys
import urllib.parse

import lxml.etree as etree
import zeep
from zeep import Plugin
from zeep.exceptions import Fault

CLIENT = 'zeep'
DIFFGRAM_NS = 'urn:schemas-microsoft-com:xml-diffgram-v1'

with open(sys.argv[1], encoding='utf-8') as f:
    FX = json.load(f)

CHECK_NAMES = ['wsdl', 'login-ok', 'login-bad', 'token-ok', 'token-bad', 'whatsnew', 'login-url', 'json-user', 'json-token', 'fault']


def report(protocol, check, ok, detail=''):
    text = ' '.join(str(detail).split())[:300]
    print(f"RESULT {CLIENT} {protocol} {check} {'PASS' if ok else 'FAIL'} {text}", flush=True)


def run_check(protocol, name, fn):
    try:
        ok, detail = fn()
        report(protocol, name, ok, detail)
    except Exception as error:  # any exception fails the check, with its type
        report(protocol, name, False, f'{type(error).__module__}.{type(error).__name__}: {error}')


class DataTablePlugin(Plugin):
    """Lets zeep read a .NET DataTable with its own inline-schema support.

    ASMX (the legacy service, and ours byte for byte) writes a DataTable as an inline xs:schema
    whose root element is `NewDataSet`, followed by a diffgram whose data element is
    `DocumentElement`. zeep parses the inline schema, then looks the diffgram's child up in it and
    fails: "No element 'DocumentElement' in namespace None. Available elements are: NewDataSet"
    (a known zeep limitation with .NET DataTable results, see python-zeep issue #1004). Renaming
    the data element to the schema's root element lets zeep deserialize the rows, typed from the
    schema (int, str, datetime).
    """

    def ingress(self, envelope, http_headers, operation):
        for diffgram in envelope.iter(f'{{{DIFFGRAM_NS}}}diffgram'):
            schema_root = None
            previous = diffgram.getprevious()
            if previous is not None and previous.tag == '{http://www.w3.org/2001/XMLSchema}schema':
                schema_root = previous.get('id')
            for child in diffgram:
                if child.tag == 'DocumentElement' and schema_root:
                    child.tag = schema_root
        return envelope, http_headers


class BadAppIdPlugin(Plugin):
    """When armed, replaces the AppID of the outgoing WhatsNew with text that is not an int.

    zeep validates an int before sending, so a request our service rejects has to be changed on
    its way out; the reply then goes through zeep's normal fault handling.
    """

    armed = False

    def egress(self, envelope, http_headers, operation, binding_options):
        if self.armed:
            for element in envelope.iter('{SVCAPI}AppID'):
                element.text = 'abc'
        return envelope, http_headers


def as_list(value):
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def read_news(result):
    """Rows of the DataTable zeep deserialized: [Schema, {'_value_1': [{'News': {...}}, ...]}]."""
    parts = as_list(getattr(result, '_value_1', None))
    schemas = [p for p in parts if isinstance(p, zeep.xsd.Schema)]
    data = [p for p in parts if not isinstance(p, zeep.xsd.Schema)]
    if not schemas or not data:
        raise AssertionError(f'unexpected WhatsNewResult shape: {result!r}'[:300])
    # The table's columns and their types, as zeep read them from the inline schema:
    # NewDataSet = xs:choice of <News> elements; News = sequence of the typed columns.
    dataset = schemas[0].get_element('NewDataSet')
    choice = dataset.type.elements_nested[0][1]
    table = choice.elements[0][1]
    columns = [(name, type(element.type).__name__) for name, element in table.type.elements]
    rows = []
    for item in as_list(data[0]['_value_1'] if '_value_1' in data[0] else None):
        for value in as_list(item.get(table.name) if isinstance(item, dict) else getattr(item, table.name, None)):
            rows.append(value)
    return columns, rows


ZEEP_TYPES = {'int': 'Int', 'string': 'String', 'dateTime': 'DateTime'}


def compare_news(columns, rows):
    expected_columns = [(name, ZEEP_TYPES[t]) for name, t in FX['columns']]
    if columns != expected_columns:
        return False, f'columns {columns} != {expected_columns}'
    if len(rows) != len(FX['news']):
        return False, f'{len(rows)} rows, expected {len(FX["news"])}'
    for i, (got, want) in enumerate(zip(rows, FX['news'])):
        expected = {'NewsID': want['newsId'], 'AppID': want['appId'], 'Title': want['title'], 'Body': want['body'],
                    'Language': want['language'], 'Url': want['url']}
        for key, value in expected.items():
            actual = got[key]
            if key == 'Url' and actual is None:
                actual = ''  # zeep reads an empty <Url /> as None
            if actual != value or type(actual) is not type(value):
                return False, f'row {i} {key} {actual!r} != {value!r}'
        published = got['PublishedAt']
        want_time = datetime.datetime.fromisoformat(want['publishedAt'].replace('Z', '+00:00'))
        if not isinstance(published, datetime.datetime) or published.tzinfo is None or published != want_time:
            return False, f'row {i} PublishedAt {published!r} != {want_time!r}'
    first = rows[0]['PublishedAt']
    return True, f"{len(rows)} rows; NewsID={[r['NewsID'] for r in rows]}; PublishedAt[0]={first.isoformat()}"


def run_protocol(protocol, binding_name):
    state = {}
    bad = BadAppIdPlugin()

    def load():
        client = zeep.Client(FX['wsdl'], plugins=[DataTablePlugin(), bad])
        state['client'] = client
        state['service'] = client.bind('Authentication', binding_name)
        ops = sorted(client.wsdl.bindings[f'{{SVCAPI}}{binding_name}']._operations)
        return len(ops) == 6, f'binding {binding_name}: {",".join(ops)}'

    run_check(protocol, 'wsdl', load)
    if 'service' not in state:
        for name in CHECK_NAMES[1:]:
            report(protocol, name, False, 'no client (WSDL did not load)')
        return
    client = state['client']
    service = state['service']

    def login_ok():
        token = service.ValidateUser(login=FX['login'], password=FX['password'], AppId=FX['appId'], IPAddress='')
        state['token'] = token
        return isinstance(token, str) and len(token) >= 16, f'token {token!r}'

    def login_bad():
        result = service.ValidateUser(login=FX['login'], password=FX['badPassword'], AppId=FX['appId'], IPAddress='')
        # The service answers <ValidateUserResult /> (""); zeep reads an empty string element as None.
        return result in ('', None), f'result {result!r}'

    def token_ok():
        result = service.ValidateUserToken(token=state.get('token'))
        return result is True, f'result {result!r}'

    def token_bad():
        result = service.ValidateUserToken(token='not-a-token-0000')
        return result is False, f'result {result!r}'

    def whats_new():
        result = service.WhatsNew(AppToken='', AppID=FX['appId'], AppVersion='', Language='en', qtyNews=FX['qtyNews'])
        ok, detail = compare_news(*read_news(result))
        if not ok:
            return ok, detail
        # An empty table (qtyNews = 0): schema, empty diffgram.
        columns, rows = read_news(service.WhatsNew(AppToken='', AppID=FX['appId'], AppVersion='', Language='en', qtyNews=0))
        return not rows and len(columns) == len(FX['columns']), f'{detail}; qtyNews=0: {len(rows)} rows, {len(columns)} columns'

    def login_url():
        url = service.GetUserLoginURL(token=state.get('token'), AppID=FX['appId'])
        if not isinstance(url, str) or not (url.startswith(FX['loginUrl'] + '&ticket=') or url.startswith(FX['loginUrl'] + '?ticket=')):
            return False, f'url {url!r}'
        ticket = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)['ticket'][0]
        first = service.ValidateUserToken(token=ticket)
        second = service.ValidateUserToken(token=ticket)
        return first is True and second is False, f'{url} -> first {first}, second {second}'

    # The JSON operations declare no parameters; they read them from the request, here from the
    # query string of the endpoint address (a service proxy bound to another address).
    def at(query):
        return client.create_service(f'{{SVCAPI}}{binding_name}', FX['endpoint'] + '?' + urllib.parse.urlencode(query))

    def json_user():
        text = at({'login': FX['login'], 'password': FX['password'], 'AppId': FX['appId']}).ValidateUserJSON()
        data = json.loads(text)
        state['json_token'] = data.get('token')
        valid = service.ValidateUserToken(token=data.get('token'))
        return data.get('success') is True and valid is True, f'{text}; token valid={valid}'

    def json_token():
        good = at({'token': state.get('json_token') or state.get('token') or ''}).ValidateUserTokenJSON()
        bad_text = at({'token': 'garbage'}).ValidateUserTokenJSON()
        g, b = json.loads(good), json.loads(bad_text)
        return g.get('valid') is True and b.get('valid') is False, f'{good} / {bad_text}'

    def fault():
        bad.armed = True
        try:
            result = service.WhatsNew(AppToken='', AppID=1, AppVersion='', Language='', qtyNews=1)
            return False, f'no exception; result {result!r}'[:200]
        except Fault as error:
            code = error.code
            expected_code = 'Client' if protocol == 'soap11' else 'Sender'
            ok = FX['soapFaultText'] in (error.message or '') and code is not None and code.endswith(expected_code)
            return ok, f'zeep.exceptions.Fault code={code} message={error.message}'
        finally:
            bad.armed = False

    for name, fn in [('login-ok', login_ok), ('login-bad', login_bad), ('token-ok', token_ok), ('token-bad', token_bad),
                     ('whatsnew', whats_new), ('login-url', login_url), ('json-user', json_user), ('json-token', json_token),
                     ('fault', fault)]:
        run_check(protocol, name, fn)


def main():
    print(f'VERSION {CLIENT} zeep {zeep.__version__} (lxml {etree.__version__}) on Python {sys.version.split()[0]}', flush=True)
    run_protocol('soap11', 'AuthenticationSoap')
    run_protocol('soap12', 'AuthenticationSoap12')


if __name__ == '__main__':
    main()
